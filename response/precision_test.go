package response

import (
	"net/http"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

func TestMillisecondsRoundUp(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int64
	}{{0, 0}, {-time.Second, 0}, {1, 1}, {time.Millisecond, 1}, {time.Millisecond + 1, 2}, {7 * time.Millisecond, 7}, {1500 * time.Millisecond, 1500}} {
		if got := Milliseconds(tt.d); got != tt.want {
			t.Errorf("Milliseconds(%s) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// A refusal 10 ms short of the next token says 1 s in Retry-After and 10 in
// Retry-After-Ms; a client reads the milliseconds first and falls back to the seconds.
func TestRetryAfterMsNextToRetryAfter(t *testing.T) {
	d := algorithms.Decision{Allowed: false, RetryAfter: 9*time.Millisecond + 300*time.Microsecond, Reset: time.Second}
	r := For(d, Policy{Name: "api", Policy: algorithms.Policy{Limit: 100, Window: time.Second}}, Headers{})
	r.SetRetryAfterMs(d.RetryAfter)
	if r.Header.Get("Retry-After") != "1" || r.Header.Get(RetryAfterMsHeader) != "10" {
		t.Fatalf("headers %v", r.Header)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	if w, ok := Wait(r.Header, now); !ok || w != 10*time.Millisecond {
		t.Fatalf("Wait = %s, %v", w, ok)
	}
	r.Header.Set(RetryAfterMsHeader, "ten")
	if w, ok := Wait(r.Header, now); !ok || w != time.Second {
		t.Fatalf("a malformed Retry-After-Ms falls back to Retry-After: %s, %v", w, ok)
	}
	ok200 := Response{Status: 200, Header: http.Header{}}
	ok200.SetRetryAfterMs(time.Second)
	if ok200.Header.Get(RetryAfterMsHeader) != "" {
		t.Fatal("a response without Retry-After gets no Retry-After-Ms")
	}
	if _, ok := Wait(ok200.Header, now); ok {
		t.Fatal("nothing to wait for")
	}
}

func TestParseRetryAfterMs(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true}, {"15", 15 * time.Millisecond, true}, {" 250 ", 250 * time.Millisecond, true},
		{"99999999999999999999999", 24 * time.Hour, true}, {"86400001", 24 * time.Hour, true},
		{"", 0, false}, {"-5", 0, false}, {"1.5", 0, false}, {"10ms", 0, false},
	} {
		got, ok := ParseRetryAfterMs(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfterMs(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
