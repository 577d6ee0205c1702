// Package response builds the HTTP answer a rate-limited server sends and parses the parts
// of it a client acts on. A refusal is 429 Too Many Requests (never 403, which means "not
// allowed at all"; 503 Service Unavailable is for overload, not for a client over its
// limit), with:
//
//   - Retry-After in whole seconds, rounded up from the limiter's exact time until a
//     request of the same cost could pass, so a client that waits it out passes;
//   - the IETF httpapi draft's structured fields, RateLimit-Policy: "name";q=100;w=60 and
//     RateLimit: "name";r=0;t=12, where r is the units that would still pass now and t,
//     in every response alike, the seconds until the quota is whole again (the key back
//     to an idle key's state: the limiter's Reset, rounded up);
//   - optionally the older RateLimit-Limit/-Remaining/-Reset and X-RateLimit-* forms that
//     many clients still read;
//   - Cache-Control: no-store, so that no shared cache replays the refusal to other clients;
//   - a short application/problem+json body (RFC 9457) naming the violated policy.
//
// A request that costs more than the policy can ever admit (RetryAfter is
// algorithms.Never) is answered 413 Content Too Large instead, with no Retry-After: no
// wait makes it pass, and a client treats a 4xx other than 429 as final rather than
// retrying it.
//
// Building a response does no I/O and reads no clock: the decision carries every time.
package response

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Headers choose which header families a response carries. The zero value sends only
// Retry-After and the draft's structured fields.
type Headers struct {
	// Legacy adds RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds).
	Legacy bool
	// XRateLimit adds X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
	// (seconds from now, not a Unix time).
	XRateLimit bool
	// NoDraft leaves out RateLimit-Policy and RateLimit.
	NoDraft bool
}

// Policy is a named limit as a response advertises it.
type Policy struct {
	// Name identifies the policy (a layer of layered limits) in headers and the body; it
	// must be a valid structured-field string (printable ASCII; quotes and backslashes
	// are escaped).
	Name string
	algorithms.Policy
}

// Response is a status, headers and body ready to write.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Problem is the application/problem+json body of a refusal.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Policy names the limit that refused the request.
	Policy string `json:"policy"`
	Limit  int64  `json:"limit"`
	// WindowSeconds is the policy's window, rounded up to whole seconds.
	WindowSeconds int64 `json:"window_seconds"`
	// RetryAfterSeconds is Retry-After; absent when the request can never pass.
	RetryAfterSeconds *int64 `json:"retry_after_seconds,omitempty"`
}

// Seconds rounds d up to whole seconds, the unit of Retry-After and the RateLimit fields;
// rounding down would send a client back before it can pass.
func Seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// For builds the response to a request the limiter decided: 200 with the rate-limit
// headers when allowed, 429 when refused, and 413 when refused with a RetryAfter of
// algorithms.Never (the cost exceeds what the policy can ever admit), which carries no
// Retry-After since waiting would not help.
//
// The RateLimit t field (and RateLimit-Reset, X-RateLimit-Reset) is always Seconds of
// d.Reset: the time until the quota is whole again, the meaning the IETF draft gives it
// ("the number of seconds until the quota associated with the quota policy resets",
// draft-ietf-httpapi-ratelimit-headers-09). It is not the time until the next request
// passes; Retry-After says that. So two responses from the same state carry the same t
// less the time between them, allowed or refused.
func For(d algorithms.Decision, p Policy, h Headers) Response {
	r := Response{Status: http.StatusOK, Header: http.Header{}}
	setLimitHeaders(r.Header, p, d.Remaining, Seconds(d.Reset), h)
	if d.Allowed {
		return r
	}
	prob := Problem{
		Type: "about:blank", Policy: p.Name, Limit: p.Limit, WindowSeconds: Seconds(p.Window),
	}
	if d.RetryAfter == algorithms.Never {
		r.Status = http.StatusRequestEntityTooLarge
		prob.Detail = fmt.Sprintf("cost above what %q (%d per %s) ever admits; it can never pass", p.Name, p.Limit, p.Window)
	} else {
		r.Status = http.StatusTooManyRequests
		retry := max(Seconds(d.RetryAfter), 1)
		r.Header.Set("Retry-After", strconv.FormatInt(retry, 10))
		prob.RetryAfterSeconds = &retry
		prob.Detail = fmt.Sprintf("rate limit %q of %d per %s exceeded; retry after %d s", p.Name, p.Limit, p.Window, retry)
	}
	prob.Status, prob.Title = r.Status, http.StatusText(r.Status)
	r.Header.Set("Cache-Control", "no-store")
	r.Header.Set("Content-Type", "application/problem+json")
	r.Body = problemJSON(prob)
	return r
}

// Overloaded builds the 503 a server sends when it, not the client, is the problem.
// retryAfter ≤ 0 sends no Retry-After.
func Overloaded(retryAfter time.Duration) Response {
	r := Response{Status: http.StatusServiceUnavailable, Header: http.Header{}}
	prob := Problem{Type: "about:blank", Title: "Service Unavailable", Status: r.Status, Detail: "the service is overloaded"}
	if retryAfter > 0 {
		s := Seconds(retryAfter)
		prob.RetryAfterSeconds = &s
		r.Header.Set("Retry-After", strconv.FormatInt(s, 10))
	}
	r.Header.Set("Cache-Control", "no-store")
	r.Header.Set("Content-Type", "application/problem+json")
	r.Body = problemJSON(prob)
	return r
}

func problemJSON(p Problem) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		// A Problem holds strings and integers only; Marshal cannot fail on it.
		panic(err)
	}
	return append(b, '\n')
}

func setLimitHeaders(h http.Header, p Policy, remaining, reset int64, which Headers) {
	limit := strconv.FormatInt(p.Limit, 10)
	rem := strconv.FormatInt(max(remaining, 0), 10)
	rst := strconv.FormatInt(reset, 10)
	if !which.NoDraft {
		name := sfString(p.Name)
		h.Set("RateLimit-Policy", fmt.Sprintf("%s;q=%d;w=%d", name, p.Limit, Seconds(p.Window)))
		h.Set("RateLimit", fmt.Sprintf("%s;r=%s;t=%s", name, rem, rst))
	}
	if which.Legacy {
		h.Set("RateLimit-Limit", limit)
		h.Set("RateLimit-Remaining", rem)
		h.Set("RateLimit-Reset", rst)
	}
	if which.XRateLimit {
		h.Set("X-RateLimit-Limit", limit)
		h.Set("X-RateLimit-Remaining", rem)
		h.Set("X-RateLimit-Reset", rst)
	}
}

// sfString renders s as an RFC 8941 structured-field string: quoted, with " and \
// escaped, and any byte outside printable ASCII replaced by '?' (a string item may hold
// nothing else).
func sfString(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// DisplayName spells a canonical header name as the specifications do: net/http
// canonicalizes "RateLimit-Policy" to "Ratelimit-Policy" (names are case-insensitive, and
// HTTP/2 lowercases them anyway), which reads wrong in a printed or sent response.
func DisplayName(k string) string { return strings.ReplaceAll(k, "Ratelimit", "RateLimit") }
