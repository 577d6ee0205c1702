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
