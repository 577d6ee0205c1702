package traffic

import (
	"testing"
	"time"
)

// The hand case of Finagle's RetryBudget(ttl = 1 s, minRetriesPerSec = 2,
// percentCanRetry = 0.5): deposit 1000, withdrawal 2000, reserve 4000. Two retries from
// the reserve, a refusal; three requests deposit 3000, enough for one more; after the
// window has forgotten everything (1.2 s), the reserve alone again: A A R (d d d) A R …
// A A R.
func TestRetryBudgetFinagleHandCase(t *testing.T) {
	b := BudgetConfig{Ratio: 0.5, MinPerSecond: 2, TTL: time.Second}.New().(*RetryBudget)
	if b.deposit != 1000 || b.withdrawal != 2000 || b.reserve != 4000 {
		t.Fatalf("deposit %d, withdrawal %d, reserve %d; want 1000, 2000, 4000", b.deposit, b.withdrawal, b.reserve)
	}
	steps := []struct {
		at    time.Duration
		op    string // "w" a withdrawal (a retry), "d" a deposit (a first try)
		ok    bool
		count int64 // the bucket after the step
	}{
		{0, "w", true, 2000}, {0, "w", true, 0}, {0, "w", false, 0},
		{0, "d", true, 1000}, {0, "d", true, 2000}, {0, "d", true, 3000},
		{0, "w", true, 1000}, {0, "w", false, 1000},
		{1200 * ms, "w", true, 2000}, {1200 * ms, "w", true, 0}, {1200 * ms, "w", false, 0},
	}
	for i, s := range steps {
		ok := true
		if s.op == "w" {
			ok = b.Retry(s.at, ServerError)
		} else if w, sent := b.Send(s.at, true); w != 0 || !sent {
			t.Fatalf("step %d: a budget never holds a first try back", i)
		}
		if ok != s.ok || b.count(s.at) != s.count {
			t.Fatalf("step %d (%s at %s): ok %v, count %d; want %v, %d", i, s.op, s.at, ok, b.count(s.at), s.ok, s.count)
		}
	}
	if _, ok := b.Send(1200*ms, false); !ok || b.count(1200*ms) != 0 {
		t.Fatal("a retry's send deposits nothing and is never held back")
	}
}

// The reserve and the ratio add: 1000 requests at 20% on a reserve of 10 a second over
// 10 s allow 200 + 100 retries, not max(200, 100).
func TestRetryBudgetReserveAddsToTheRatio(t *testing.T) {
	for _, c := range []struct {
		cfg   BudgetConfig
		first int
		want  int
	}{
		{DefaultBudget, 1000, 300},
		{DefaultBudget, 0, 100},
		{BudgetConfig{Ratio: 0.1, MinPerSecond: 1, TTL: 10 * time.Second}, 300, 40},
		{BudgetConfig{Ratio: 0, MinPerSecond: 3, TTL: 2500 * ms}, 50, 6}, // the reserve counts whole seconds
		{BudgetConfig{Ratio: 2, MinPerSecond: 0, TTL: time.Minute}, 7, 14},
		{BudgetConfig{Ratio: 0, MinPerSecond: 0, TTL: time.Second}, 100, 0}, // Finagle's Empty
	} {
		b := c.cfg.New().(*RetryBudget)
		for range c.first {
			b.Send(0, true)
		}
		if bal := b.Balance(0); bal != int64(c.want) {
			t.Errorf("%+v after %d requests: balance %d, want %d", c.cfg, c.first, bal, c.want)
		}
		got := 0
		for b.Retry(0, Throttled) {
			got++
		}
		if got != c.want {
			t.Errorf("%+v after %d requests: %d retries, want %d", c.cfg, c.first, got, c.want)
		}
	}
}

// Slices open where the adder is touched, not on a grid from t=0: a deposit at 0 whose
// slice is closed at 150 ms, with the adder touched every 100 ms after, leaves the window
// at 1050 ms (ten slices later), not at 1000 ms; a long gap clears every slice at once.
func TestRetryBudgetSlicesAnchorWhereTouched(t *testing.T) {
	b := BudgetConfig{Ratio: 1, MinPerSecond: 0, TTL: time.Second}.New().(*RetryBudget)
	b.Send(0, true)
	if b.Balance(50*ms) != 1 {
		t.Fatal("the deposit is not counted")
	}
	for at := 150 * ms; at <= 950*ms; at += 100 * ms {
		if b.Balance(at) != 1 {
			t.Fatalf("at %s: the deposit of t=0 left early", at)
		}
	}
	if b.Balance(1049*ms) != 1 || b.Balance(1050*ms) != 0 {
		t.Fatalf("balance %d at 1049 ms and %d at 1050 ms; want the deposit until its slice is overwritten at 1050 ms", b.Balance(1049*ms), b.Balance(1050*ms))
	}
	b.Send(1100*ms, true)
	b.Send(1150*ms, true)
	if b.Balance(1160*ms) != 2 || b.Balance(5*time.Second) != 0 {
		t.Fatalf("balance %d, then %d after a 4 s gap; want 2 then 0", b.Balance(1160*ms), b.Balance(5*time.Second))
	}
	// Withdrawals leave the window too: the reserve grows back.
	r := BudgetConfig{Ratio: 0, MinPerSecond: 2, TTL: time.Second}.New().(*RetryBudget)
	if !r.Retry(0, ServerError) || !r.Retry(0, ServerError) || r.Retry(500*ms, ServerError) {
		t.Fatal("a reserve of 2 a second over 1 s allows two retries at once, then none")
	}
	if !r.Retry(1200*ms, ServerError) {
		t.Fatal("the reserve did not grow back once the withdrawals left the window")
	}
}

func TestRetryBudgetValidates(t *testing.T) {
	for _, c := range []struct {
		cfg  BudgetConfig
		want string
	}{
		{BudgetConfig{Ratio: -0.1, TTL: time.Second}, "budget-ratio"},
		{BudgetConfig{Ratio: 0.1, MinPerSecond: -1, TTL: time.Second}, "budget-min"},
		{BudgetConfig{Ratio: 0.1, TTL: 999 * ms}, "budget-ttl: must be between 1s and 1m0s"},
		{BudgetConfig{Ratio: 0.1, TTL: time.Minute + ms}, "budget-ttl"},
	} {
		if err := c.cfg.validate(); err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
	if err := DefaultBudget.validate(); err != nil {
		t.Errorf("the default: %v", err)
	}
}
