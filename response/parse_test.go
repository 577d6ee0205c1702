package response

import (
	"testing"
	"time"
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
