package server

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// TestLeakyBucketHoldsEachRequestItsDelay sends requests at one instant to a leaky bucket
// draining one unit every 100 ms, with the wait cut at 350 ms: each admitted request is
// held exactly its place in the queue, the one that would wait 400 ms is refused without
// taking a place, and RateLimit's r counts the requests that would still get in.
func TestLeakyBucketHoldsEachRequestItsDelay(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	var waits []time.Duration
	srv, _ := newTestServerWith(t, "leaky-bucket", algorithms.Policy{Limit: 10, Window: time.Second}, Config{
		Key: "global", Now: clock.Now, MaxDelay: 350 * time.Millisecond,
		Wait: func(_ context.Context, d time.Duration) bool {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, d)
			return true
		},
	})
	want := []struct {
		status int
		wait   time.Duration
		r      string
	}{
		{200, 0, "3"},
		{200, 100 * time.Millisecond, "2"},
		{200, 200 * time.Millisecond, "1"},
		{200, 300 * time.Millisecond, "0"},
		{429, 0, "0"},
	}
	for i, w := range want {
		mu.Lock()
		waits = nil
		mu.Unlock()
		r := get(t, srv.URL)
		var waited time.Duration
		if len(waits) > 0 {
			waited = waits[0]
		}
		if r.StatusCode != w.status || waited != w.wait || r.Header.Get("RateLimit-Remaining") != w.r {
			t.Fatalf("request %d: %d, held %s, remaining %q; want %d, %s, %s", i+1, r.StatusCode, waited,
				r.Header.Get("RateLimit-Remaining"), w.status, w.wait, w.r)
		}
		if w.status == 429 && (r.Header.Get("Retry-After") != "1" || r.Header.Get("RateLimit-Reset") != "1") {
			t.Fatalf("refusal: Retry-After %q, reset %q; want 1 (50 ms rounded up) and 1 (the queue empties in 400 ms)",
				r.Header.Get("Retry-After"), r.Header.Get("RateLimit-Reset"))
		}
	}
	// 50 ms on, the wait is 350 ms: the refused request took no place in the queue.
	clock.Add(50 * time.Millisecond)
	waits = nil
	if r := get(t, srv.URL); r.StatusCode != 200 || len(waits) != 1 || waits[0] != 350*time.Millisecond {
		t.Fatalf("after 50 ms: %d, held %v; want 200 after 350ms", r.StatusCode, waits)
	}
}

// TestLeakyBucketAnswersAfterItsDelay runs the queue on the wall clock: a second request
// right after the first is answered a unit's span (200 ms) later, not at once.
func TestLeakyBucketAnswersAfterItsDelay(t *testing.T) {
	srv, _ := newTestServerWith(t, "leaky-bucket", algorithms.Policy{Limit: 5, Window: time.Second}, Config{Key: "global"})
	get(t, srv.URL)
	start := time.Now()
	r := get(t, srv.URL)
	if took := time.Since(start); r.StatusCode != 200 || took < 150*time.Millisecond {
		t.Fatalf("second request: %d after %s; want 200 after about 200 ms", r.StatusCode, took)
	}
}

func TestStopAnswersHeldRequestsAt503(t *testing.T) {
	srv, h := newTestServerWith(t, "leaky-bucket", algorithms.Policy{Limit: 1, Window: 10 * time.Second, Burst: 2}, Config{Key: "global", MaxDelay: time.Minute})
	get(t, srv.URL)
	go func() {
		time.Sleep(100 * time.Millisecond)
		h.Stop()
	}()
	start := time.Now()
	r := get(t, srv.URL) // would be held 10 s
	if took := time.Since(start); r.StatusCode != http.StatusServiceUnavailable || took > 5*time.Second {
		t.Fatalf("held request after Stop: %d after %s", r.StatusCode, took)
	}
}

func TestCostHeader(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	srv, _ := newTestServerWith(t, "sliding-log", algorithms.Policy{Limit: 5, Window: time.Second},
		Config{Key: "global", CostHeader: "X-Cost", Now: clock.Now})
	for _, tt := range []struct {
		cost   string
		status int
		r      string
	}{
		{"3", 200, "2"},
		{"", 200, "1"},
		{"2", 429, "1"},
		{"6", 413, "1"},
		{"0", 400, ""},
		{"1.5", 400, ""},
		{"99999999999999999999", 400, ""},
		{"1", 200, "0"},
	} {
		r := get(t, srv.URL, "X-Cost", tt.cost)
		if r.StatusCode != tt.status || r.Header.Get("RateLimit-Remaining") != tt.r {
			t.Errorf("cost %q: %d, remaining %q; want %d, %q", tt.cost, r.StatusCode, r.Header.Get("RateLimit-Remaining"), tt.status, tt.r)
		}
		if tt.status == 413 && r.Header.Get("Retry-After") != "" {
			t.Errorf("cost %q: Retry-After %q on a request that can never pass", tt.cost, r.Header.Get("Retry-After"))
		}
	}
}
