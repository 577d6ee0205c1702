package response

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

var epoch = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

func TestRefusalCarriesEveryField(t *testing.T) {
	p := Policy{Name: "default", Policy: algorithms.Policy{Limit: 100, Window: time.Minute}}
	lim := algorithms.NewFixedWindow(p.Policy)
	now := epoch.Add(48 * time.Second).UnixNano() // 12 s before the window ends
	for range 100 {
		if !lim.Allow(0, now, 1).Allowed {
			t.Fatal("refused within the limit")
		}
	}
	r := For(lim.Allow(0, now, 1), p, Headers{Legacy: true, XRateLimit: true})
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", r.Status)
	}
	want := map[string]string{
		"Retry-After":           "12",
		"Ratelimit-Policy":      `"default";q=100;w=60`,
		"Ratelimit":             `"default";r=0;t=12`,
		"Ratelimit-Limit":       "100",
		"Ratelimit-Remaining":   "0",
		"Ratelimit-Reset":       "12",
		"X-Ratelimit-Limit":     "100",
		"X-Ratelimit-Remaining": "0",
		"X-Ratelimit-Reset":     "12",
		"Cache-Control":         "no-store",
		"Content-Type":          "application/problem+json",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if len(r.Header) != len(want) {
		t.Errorf("headers %v, want exactly %d", r.Header, len(want))
	}
	var prob Problem
	if err := json.Unmarshal(r.Body, &prob); err != nil {
		t.Fatal(err)
	}
	if prob.Status != 429 || prob.Policy != "default" || prob.Limit != 100 || prob.WindowSeconds != 60 ||
		prob.RetryAfterSeconds == nil || *prob.RetryAfterSeconds != 12 || prob.Title != "Too Many Requests" {
		t.Errorf("body %s", r.Body)
	}
	if len(r.Body) > 400 {
		t.Errorf("body of %d bytes; a refusal should be cheap", len(r.Body))
	}
}

func TestAllowedCarriesOnlyLimitHeaders(t *testing.T) {
	p := Policy{Name: "per-user", Policy: algorithms.Policy{Limit: 10, Window: time.Second}}
	lim := algorithms.NewTokenBucket(p.Policy)
	r := For(lim.Allow(0, epoch.UnixNano(), 3), p, Headers{})
	if r.Status != 200 || r.Body != nil || r.Header.Get("Retry-After") != "" || r.Header.Get("Cache-Control") != "" {
		t.Fatalf("%+v", r)
	}
	if got := r.Header.Get("RateLimit"); got != `"per-user";r=7;t=1` {
		t.Errorf("RateLimit %q", got)
	}
	if r.Header.Get("RateLimit-Limit") != "" || r.Header.Get("X-RateLimit-Limit") != "" {
		t.Error("older forms sent though not asked for")
	}
}

func TestRefusalThatCanNeverPassIs413WithoutRetryAfter(t *testing.T) {
	p := Policy{Name: "default", Policy: algorithms.Policy{Limit: 5, Window: time.Second}}
	for _, name := range algorithms.Defaults() {
		lim, _ := algorithms.New(name, p.Policy)
		d := lim.Allow(0, epoch.UnixNano(), 6)
		r := For(d, p, Headers{Legacy: true})
		if r.Status != http.StatusRequestEntityTooLarge || r.Header.Get("Retry-After") != "" || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %+v", name, r)
		}
		if got := r.Header.Get("RateLimit"); got != `"default";r=5;t=0` {
			t.Errorf("%s: RateLimit %q: the quota is untouched and whole", name, got)
		}
		var prob Problem
		if err := json.Unmarshal(r.Body, &prob); err != nil || prob.RetryAfterSeconds != nil || prob.Status != 413 ||
			!strings.Contains(prob.Detail, "can never pass") {
			t.Fatalf("%s: body %s (%v)", name, r.Body, err)
		}
		// A cost the policy can hold is an ordinary 429 once the key is spent.
		for range 5 {
			lim.Allow(1, epoch.UnixNano(), 1)
		}
		if r := For(lim.Allow(1, epoch.UnixNano(), 5), p, Headers{}); r.Status != 429 || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s: a cost of the limit on a spent key: %d %v", name, r.Status, r.Header)
		}
	}
}

// TestResetFieldMeansOneThing checks that t is the time until the quota is whole in every
// response: an allowed response that spends the last unit and a refusal from the same
// state at the same instant carry the same t (where Retry-After may be far shorter), and
// a request of the full burst sent t seconds later passes.
func TestResetFieldMeansOneThing(t *testing.T) {
	pol := algorithms.Policy{Limit: 10, Window: 10 * time.Second}
	p := Policy{Name: "p", Policy: pol}
	for _, name := range algorithms.Defaults() {
		t.Run(name, func(t *testing.T) {
			lim, _ := algorithms.New(name, pol)
			now := epoch.Add(3500 * time.Millisecond).UnixNano()
			var last Response
			for range 10 {
				last = For(lim.Allow(0, now, 1), p, Headers{Legacy: true})
			}
			refused := For(lim.Allow(0, now, 1), p, Headers{Legacy: true})
			if last.Status != 200 || refused.Status != 429 {
				t.Fatalf("statuses %d then %d", last.Status, refused.Status)
			}
			tAllowed, tRefused := field(t, last, "t"), field(t, refused, "t")
			if tAllowed != tRefused || refused.Header.Get("RateLimit-Reset") != strconv.FormatInt(tRefused, 10) {
				t.Fatalf("t=%d when the last unit went, t=%d refused from the same state (RateLimit-Reset %s)",
					tAllowed, tRefused, refused.Header.Get("RateLimit-Reset"))
			}
			ra, _ := strconv.ParseInt(refused.Header.Get("Retry-After"), 10, 64)
			if ra > tRefused {
				t.Errorf("Retry-After %d beyond t=%d: the quota cannot be whole before the next unit passes", ra, tRefused)
			}
			at := now + tRefused*int64(time.Second)
			if d := lim.Allow(0, at, pol.EffectiveBurst()); !d.Allowed || d.Remaining != 0 {
				t.Errorf("a full burst %d s later: %+v, want admitted with nothing left", tRefused, d)
			}
		})
	}
}

// field reads the integer parameter name of r's RateLimit field.
func field(t *testing.T, r Response, name string) int64 {
	t.Helper()
	for _, part := range strings.Split(r.Header.Get("RateLimit"), ";")[1:] {
		if k, v, _ := strings.Cut(part, "="); k == name {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", name, r.Header.Get("RateLimit"))
	return 0
}

func TestOverloadedIs503(t *testing.T) {
	r := Overloaded(1500 * time.Millisecond)
	if r.Status != 503 || r.Header.Get("Retry-After") != "2" || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%+v", r)
	}
	if r := Overloaded(0); r.Header.Get("Retry-After") != "" {
		t.Fatalf("%+v", r)
	}
}

func TestPolicyNameIsEscaped(t *testing.T) {
	p := Policy{Name: "a\"b\\c\nd", Policy: algorithms.Policy{Limit: 1, Window: time.Second}}
	r := For(algorithms.Decision{Allowed: true}, p, Headers{})
	if got := r.Header.Get("RateLimit-Policy"); got != `"a\"b\\c?d";q=1;w=1` {
		t.Fatalf("%q", got)
	}
}

// TestHeadersTellTheTruth drives every algorithm with a client that, when refused, waits
// exactly what Retry-After says (parsed back from the response, in both forms) and retries.
// The header must be truthful both ways: the retry passes (the share refused again is 0),
// and one second earlier the same request would still have been refused, so the header is
// the limiter's true next-allowed time rounded up to the second, not a padded guess.
func TestHeadersTellTheTruth(t *testing.T) {
	policies := []algorithms.Policy{
		{Limit: 5, Window: time.Second},
		{Limit: 100, Window: time.Minute},
		{Limit: 7, Window: 10 * time.Second, Burst: 3},
	}
	for _, pol := range policies {
		for _, name := range algorithms.Defaults() {
			for _, date := range []bool{false, true} {
				t.Run(pol.String()+"/"+name+"/date="+strconv.FormatBool(date), func(t *testing.T) {
					honoured, refusedAgain, early := truthRun(t, name, pol, date)
					if honoured < 8 {
						t.Fatalf("only %d honoured retries: the test did not exercise refusals", honoured)
					}
					if refusedAgain != 0 {
						t.Errorf("%d of %d retries after Retry-After refused again (share %.3f, want 0)",
							refusedAgain, honoured, float64(refusedAgain)/float64(honoured))
					}
					if early != 0 {
						t.Errorf("%d of %d refusals would have passed a second before Retry-After", early, honoured)
					}
				})
			}
		}
	}
}

type arrival struct {
	at   int64
	cost int64
}

func truthRun(t *testing.T, name string, pol algorithms.Policy, date bool) (honoured, refusedAgain, early int) {
	t.Helper()
	p := Policy{Name: "p", Policy: pol}
	lim, err := algorithms.New(name, pol)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var history []arrival
	decide := func(at, cost int64) algorithms.Decision {
		history = append(history, arrival{at, cost})
		return lim.Allow(0, at, cost)
	}
	// wouldPass replays the history on a fresh limiter and asks about one more request.
	wouldPass := func(at, cost int64) bool {
		fresh, _ := algorithms.New(name, pol)
		for _, a := range history {
			fresh.Allow(0, a.at, a.cost)
		}
		return fresh.Allow(0, at, cost).Allowed
	}
	now := epoch.UnixNano() + rng.Int64N(int64(pol.Window))
	for range 1000 {
		cost := 1 + rng.Int64N(2)
		d := decide(now, cost)
		if !d.Allowed {
			r := For(d, p, Headers{})
			if date {
				r.RetryAfterDate(time.Unix(0, now))
			}
			wait, ok := ParseRetryAfter(r.Header.Get("Retry-After"), time.Unix(0, now))
			if !ok {
				t.Fatalf("unparsable Retry-After %q", r.Header.Get("Retry-After"))
			}
			honoured++
			if !date && wait >= time.Second && wouldPass(now+int64(wait-time.Second), cost) {
				early++
			}
			now += int64(wait)
			if !decide(now, cost).Allowed {
				refusedAgain++
			}
		}
		// Mostly tight gaps so the key runs into its limit, now and then a long pause.
		gap := time.Duration(rng.Int64N(int64(pol.Window) / pol.Limit / 2))
		if rng.IntN(100) == 0 {
			gap = time.Duration(rng.Int64N(int64(pol.Window) * 2))
		}
		now += int64(gap)
	}
	return honoured, refusedAgain, early
}
