package response

import (
	"net/http"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"12", 12 * time.Second, true},
		{"0", 0, true},
		{" 3 ", 3 * time.Second, true},
		{"99999999999999999999999", 24 * time.Hour, true},
		{"Thu, 01 Jan 2026 10:00:30 GMT", 30 * time.Second, true},   // IMF-fixdate
		{"Thursday, 01-Jan-26 10:00:05 GMT", 5 * time.Second, true}, // RFC 850
		{"Thu Jan  1 10:01:00 2026", time.Minute, true},             // asctime
		{"Thu, 01 Jan 2026 09:00:00 GMT", 0, true},                  // in the past
		{"Fri, 01 Jan 2027 10:00:00 GMT", 24 * time.Hour, true},     // capped
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"12s", 0, false},
		{"soon", 0, false},
		{"2026-01-01T10:00:30Z", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRetryAfterDateRoundsUp(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 10, 700_000_000, time.UTC)
	r := Response{Header: map[string][]string{"Retry-After": {"1"}}}
	r.RetryAfterDate(now)
	if got := r.Header.Get("Retry-After"); got != "Thu, 01 Jan 2026 10:00:12 GMT" {
		t.Fatalf("Retry-After %q", got)
	}
	if wait, _ := ParseRetryAfter(r.Header.Get("Retry-After"), now); wait < time.Second {
		t.Fatalf("the date form waits %s, less than the 1 s it replaces", wait)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"12", "0", "Thu, 01 Jan 2026 10:00:30 GMT", "Thu Jan  1 10:01:00 2026", "-1", "1e9", "\x00"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		wait, ok := ParseRetryAfter(s, now)
		if wait < 0 || wait > maxRetryAfter || (!ok && wait != 0) {
			t.Fatalf("ParseRetryAfter(%q) = %s, %v", s, wait, ok)
		}
	})
}

func TestParseQuota(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   Quota
		ok     bool
	}{
		{"draft", map[string]string{"RateLimit": `"default";r=7;t=12`}, Quota{7, 12 * time.Second, "RateLimit"}, true},
		{"draft, two policies", map[string]string{"RateLimit": `"burst";r=3;t=1, "daily";r=900;t=86000`},
			Quota{3, 86000 * time.Second, "RateLimit"}, true},
		{"draft without t", map[string]string{"RateLimit": `"p";r=0`}, Quota{0, 0, "RateLimit"}, true},
		{"draft wins", map[string]string{"RateLimit": `"p";r=1;t=2`, "RateLimit-Remaining": "50"}, Quota{1, 2 * time.Second, "RateLimit"}, true},
		{"legacy", map[string]string{"RateLimit-Remaining": "4", "RateLimit-Reset": "9"}, Quota{4, 9 * time.Second, "RateLimit-Remaining"}, true},
		{"x- seconds", map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "30"}, Quota{0, 30 * time.Second, "X-RateLimit-Remaining"}, true},
		{"x- unix time", map[string]string{"X-RateLimit-Remaining": "2", "X-RateLimit-Reset": "1767261645"}, Quota{2, 45 * time.Second, "X-RateLimit-Remaining"}, true},
		{"none", map[string]string{"Retry-After": "3"}, Quota{}, false},
		{"draft without r", map[string]string{"RateLimit": `"p";t=3`}, Quota{}, false},
		{"draft bad r", map[string]string{"RateLimit": `"p";r=-1;t=3`}, Quota{}, false},
		{"draft empty item", map[string]string{"RateLimit": `;r=1`}, Quota{}, false},
		{"legacy bad", map[string]string{"RateLimit-Remaining": "lots"}, Quota{}, false},
		{"legacy bad reset", map[string]string{"RateLimit-Remaining": "1", "RateLimit-Reset": "1.5"}, Quota{}, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		got, ok := ParseQuota(h, now)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: %+v %v, want %+v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// TestQuotaRoundTrip reads back what For writes, in each header family.
func TestQuotaRoundTrip(t *testing.T) {
	p := Policy{Name: "p", Policy: algorithms.Policy{Limit: 10, Window: time.Minute}}
	d := algorithms.Decision{Allowed: true, Remaining: 3, Reset: 41500 * time.Millisecond}
	for _, h := range []Headers{{}, {Legacy: true, NoDraft: true}, {XRateLimit: true, NoDraft: true}} {
		q, ok := ParseQuota(For(d, p, h).Header, time.Time{})
		if !ok || q.Remaining != 3 || q.Reset != 42*time.Second {
			t.Errorf("%+v: %+v %v", h, q, ok)
		}
	}
}

func FuzzParseQuota(f *testing.F) {
	for _, s := range []string{`"p";r=7;t=12`, `"a";r=1, "b";r=2;t=9`, `;r=`, `"p";r=99999999999999999999999;t=1`, "\x00"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{"RateLimit", "RateLimit-Remaining", "X-RateLimit-Reset"} {
			h := http.Header{name: {s}, "X-Ratelimit-Remaining": {"1"}}
			q, ok := ParseQuota(h, now)
			if q.Remaining < 0 || q.Reset < 0 || q.Reset > maxRetryAfter || (!ok && q != Quota{}) {
				t.Fatalf("%s: %q: %+v %v", name, s, q, ok)
			}
		}
	})
}
