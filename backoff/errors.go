package backoff

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// ErrorShare is one entry of an error mix: a Share of answers with Status, carrying
// Retry-After when RetryAfter > 0 (5xx only).
type ErrorShare struct {
	Status     int
	RetryAfter time.Duration
	Share      float64
}

// ErrorMix is how an API fails requests it admitted. A client error (a 4xx other than
// 429) belongs to the request: the same Share of requests is malformed, and every attempt
// of such a request gets it, so a retry can never help. A server error belongs to the
// attempt: each attempt of a well-formed request draws it with its Share, so a retry may
// pass. Shares add up to at most 1 within each kind.
type ErrorMix []ErrorShare

// ParseErrorMix reads "CODE[/RETRY_AFTER]=SHARE,…" where SHARE is a percentage ("2%") or a
// fraction ("0.02"): "503=2%,503/1s=1%,400=0.5%" is 2% of attempts answered 503 without
// Retry-After, 1% answered 503 with Retry-After: 1, and 0.5% of requests malformed (400).
func ParseErrorMix(s string) (ErrorMix, error) {
	var mix ErrorMix
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		code, share, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want CODE=SHARE or CODE/RETRY_AFTER=SHARE", part)
		}
		var e ErrorShare
		code, ra, hasRA := strings.Cut(code, "/")
		n, err := strconv.Atoi(code)
		if err != nil {
			return nil, fmt.Errorf("%q: status %q is not a number", part, code)
		}
		e.Status = n
		if hasRA {
			d, err := time.ParseDuration(ra)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%q: Retry-After %q is not a positive duration", part, ra)
			}
			e.RetryAfter = d
		}
		if p, isPercent := strings.CutSuffix(share, "%"); isPercent {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: share %q is not a number", part, share)
			}
			e.Share = v / 100
		} else {
			v, err := strconv.ParseFloat(share, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: share %q is not a number", part, share)
			}
			e.Share = v
		}
		mix = append(mix, e)
	}
	return mix, mix.Validate()
}

// Validate reports an entry that cannot be answered.
func (m ErrorMix) Validate() error {
	var client, server float64
	for _, e := range m {
		switch {
		case e.Status == http.StatusTooManyRequests:
			return fmt.Errorf("429 is the limiter's answer, not an error of the API")
		case e.Status < 400 || e.Status > 599:
			return fmt.Errorf("status %d is not an error (want 400–599)", e.Status)
		case e.Status < 500 && e.RetryAfter > 0:
			return fmt.Errorf("a %d names the request as wrong; only a 5xx carries Retry-After", e.Status)
		case !(e.Share >= 0 && e.Share <= 1):
			return fmt.Errorf("share of %d must be between 0%% and 100%%, got %g", e.Status, e.Share)
		case e.RetryAfter < 0:
			return fmt.Errorf("Retry-After of %d must not be negative", e.Status)
		}
		if e.Status < 500 {
			client += e.Share
		} else {
			server += e.Share
		}
	}
	if client > 1+1e-9 || server > 1+1e-9 {
		return fmt.Errorf("the shares of 4xx and of 5xx must each add up to at most 100%%")
	}
	return nil
}

// String writes the mix back in the form ParseErrorMix reads.
func (m ErrorMix) String() string {
	parts := make([]string, len(m))
	for i, e := range m {
		code := strconv.Itoa(e.Status)
		if e.RetryAfter > 0 {
			code += "/" + e.RetryAfter.String()
		}
		parts[i] = code + "=" + strconv.FormatFloat(e.Share*100, 'g', -1, 64) + "%"
	}
	return strings.Join(parts, ",")
}

// pick draws the error, if any, that attempt a gets from an API whose run has seed. A
// request's client error comes from a hash of (seed, client, request), the same on every
// attempt and drawing nothing from rng; a server error is drawn from rng, and only when the
// mix has one, so a run without server errors draws what it drew before.
func (m ErrorMix) pick(seed uint64, a *traffic.Attempt, rng *rand.Rand) (ErrorShare, bool) {
	if len(m) == 0 {
		return ErrorShare{}, false
	}
	hasServer := false
	u := requestUniform(seed, a.Client, a.Request)
	var acc float64
	for _, e := range m {
		if e.Status >= 500 {
			hasServer = true
			continue
		}
		acc += e.Share
		if u < acc {
			return e, true
		}
	}
	if !hasServer {
		return ErrorShare{}, false
	}
	u = rng.Float64()
	acc = 0
	for _, e := range m {
		if e.Status < 500 {
			continue
		}
		acc += e.Share
		if u < acc {
			return e, true
		}
	}
	return ErrorShare{}, false
}

// requestUniform is a number in [0, 1) fixed by (seed, client, request).
func requestUniform(seed uint64, client, request int) float64 {
	// The client goes in with the seed, the request as the index: the draws rest on
	// this arrangement (sim.Derive must not change, nor may the way it is called).
	x := sim.Derive(seed^uint64(client)<<32, sim.ErrorMixSalt, 0, uint64(request))
	return float64(x>>11) * (1.0 / (1 << 53))
}
