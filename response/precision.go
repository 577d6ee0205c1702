package response

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfterMsHeader carries a wait in whole milliseconds next to Retry-After, whose
// delta-seconds cannot say "10 ms". It is not standard: some APIs send it (Azure OpenAI's
// retry-after-ms), and some SDKs read it before Retry-After (Azure's, and the client
// libraries of OpenAI's and Anthropic's APIs). A client that does not know it still reads
// Retry-After, rounded up to whole seconds.
const RetryAfterMsHeader = "Retry-After-Ms"

// Milliseconds rounds d up to whole milliseconds; rounding down would send a client back
// before it can pass.
func Milliseconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// SetRetryAfterMs adds Retry-After-Ms with wait rounded up to whole milliseconds, to a
// response that carries Retry-After; anything else is left alone.
func (r *Response) SetRetryAfterMs(wait time.Duration) {
	if r.Header == nil || r.Header.Get("Retry-After") == "" {
		return
	}
	r.Header.Set(RetryAfterMsHeader, strconv.FormatInt(max(Milliseconds(wait), 0), 10))
}

// ParseRetryAfterMs reads a Retry-After-Ms value: a non-negative count of whole
// milliseconds, capped at one day like Retry-After. ok is false for anything else.
func ParseRetryAfterMs(value string) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	var ms int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms < math.MaxInt64/10 {
			ms = ms*10 + int64(c-'0')
		}
	}
	if ms >= int64(maxRetryAfter/time.Millisecond) {
		return maxRetryAfter, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// Wait is how long the headers of a response ask a client to wait, read at now:
// Retry-After-Ms when it parses, otherwise Retry-After (ParseRetryAfter).
func Wait(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get(RetryAfterMsHeader); v != "" {
		if d, ok := ParseRetryAfterMs(v); ok {
			return d, true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		return ParseRetryAfter(v, now)
	}
	return 0, false
}
