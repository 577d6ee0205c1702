package response

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// maxRetryAfter bounds a parsed Retry-After: a client waits at most a day, whatever a
// server (or an attacker in the middle) says.
const maxRetryAfter = 24 * time.Hour

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3): either delta-seconds, a
// non-negative count of whole seconds, or an HTTP-date, read relative to now. A date in
// the past means 0. Values are capped at one day. ok is false for anything else (an
// empty, negative, fractional or malformed value), and the client then falls back to its
// own backoff.
func ParseRetryAfter(value string, now time.Time) (wait time.Duration, ok bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		var secs int64
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			if secs < math.MaxInt64/10 {
				secs = secs*10 + int64(c-'0')
			}
		}
		if secs >= int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	return min(max(d, 0), maxRetryAfter), true
}

// FormatHTTPDate renders t as an HTTP-date (IMF-fixdate, always GMT), the other form of
// Retry-After.
func FormatHTTPDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// RetryAfterDate turns the delta-seconds Retry-After of r into the HTTP-date form for a
// server whose clock reads now. The date is rounded up to the next whole second, since an
// HTTP-date has no fraction and truncating would name a moment before the wait is over.
// A response without Retry-After is left alone.
func (r *Response) RetryAfterDate(now time.Time) {
	v := r.Header.Get("Retry-After")
	if v == "" {
		return
	}
	wait, ok := ParseRetryAfter(v, now)
	if !ok {
		return
	}
	at := now.Add(wait)
	if t := at.Truncate(time.Second); !t.Equal(at) {
		at = t.Add(time.Second)
	}
	r.Header.Set("Retry-After", FormatHTTPDate(at))
}

// Quota is what a response says about a client's quota: the units that would still pass
// right now and the time until the quota is whole again.
type Quota struct {
	Remaining int64
	Reset     time.Duration
	// Field names the header the figures came from: "RateLimit", "RateLimit-Remaining"
	// or "X-RateLimit-Remaining".
	Field string
}

// unixResetAfter is where an X-RateLimit-Reset value stops being a count of seconds and
// becomes a Unix time (GitHub and others send the time of the reset, not a delay).
const unixResetAfter = 1_000_000_000

// ParseQuota reads the quota a response advertises, from the first family present: the
// IETF draft's RateLimit field ("name";r=R;t=T, several policies separated by commas:
// the smallest r and the largest t, the binding ones), then RateLimit-Remaining with
// RateLimit-Reset, then X-RateLimit-Remaining with X-RateLimit-Reset, whose reset may be
// seconds from now or, above 10⁹, a Unix time read against now. A missing reset reads as
// 0. ok is false when no family is present or the one present is malformed.
func ParseQuota(h http.Header, now time.Time) (q Quota, ok bool) {
	if v := h.Get("RateLimit"); v != "" {
		return parseDraftQuota(v)
	}
	for _, prefix := range []string{"RateLimit-", "X-RateLimit-"} {
		rem := h.Get(prefix + "Remaining")
		if rem == "" {
			continue
		}
		r, ok := parseCount(rem)
		if !ok {
			return Quota{}, false
		}
		q := Quota{Remaining: r, Field: prefix + "Remaining"}
		if v := h.Get(prefix + "Reset"); v != "" {
			s, ok := parseCount(v)
			if !ok {
				return Quota{}, false
			}
			if prefix == "X-RateLimit-" && s > unixResetAfter {
				q.Reset = max(time.Unix(s, 0).Sub(now), 0)
			} else {
				q.Reset = seconds(s)
			}
		}
		return q, true
	}
	return Quota{}, false
}

func parseDraftQuota(v string) (Quota, bool) {
	q := Quota{Remaining: math.MaxInt64, Field: "RateLimit"}
	for _, item := range strings.Split(v, ",") {
		params := strings.Split(item, ";")
		if strings.TrimSpace(params[0]) == "" {
			return Quota{}, false
		}
		var r, t int64 = -1, 0
		for _, p := range params[1:] {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			n, ok := parseCount(val)
			switch {
			case k == "r" && ok:
				r = n
			case k == "t" && ok:
				t = n
			case k == "r" || k == "t":
				return Quota{}, false
			}
		}
		if r < 0 {
			return Quota{}, false
		}
		q.Remaining = min(q.Remaining, r)
		q.Reset = max(q.Reset, seconds(t))
	}
	return q, true
}

// parseCount reads a non-negative decimal integer, saturating far above any real value.
func parseCount(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < math.MaxInt64/10-10 {
			n = n*10 + int64(c-'0')
		}
	}
	return n, true
}

// seconds converts a count of whole seconds to a Duration, capped at maxRetryAfter.
func seconds(s int64) time.Duration {
	if s >= int64(maxRetryAfter/time.Second) {
		return maxRetryAfter
	}
	return time.Duration(s) * time.Second
}
