package probe

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen is what a test server was sent: per request, its key, cost and peer address.
type seen struct {
	mu    sync.Mutex
	key   []string
	cost  []string
	peers map[string]string // key → the host it came from
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.Header.Get("X-User")
	s.key = append(s.key, key)
	s.cost = append(s.cost, r.Header.Get("X-Cost"))
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	if s.peers == nil {
		s.peers = map[string]string{}
	}
	s.peers[key] = host
}

// refuseFirst answers the first request of each key that costs 1 (its first planned
// request, in burstPlan, whatever order the requests in flight arrive in) 429 with
// Retry-After: 1, and the rest 200.
func refuseFirst(s *seen) http.Handler {
	var mu sync.Mutex
	count := map[string]int{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		if r.Header.Get("X-Cost") != "1" {
			w.Header().Set("RateLimit-Policy", `"p";q=10;w=1`)
			w.Header().Set("RateLimit", `"p";r=5;t=1`)
			return
		}
		mu.Lock()
		count[r.Header.Get("X-User")]++
		n := count[r.Header.Get("X-User")]
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("RateLimit-Policy", `"p";q=10;w=1`)
		w.Header().Set("RateLimit", `"p";r=5;t=1`)
	})
}

// burstPlan is n requests of each key, 10 ms apart, each costing its index plus one.
func burstPlan(keys []string, n int) Plan {
	p := Plan{Keys: keys}
	for i := range n {
		for _, k := range keys {
			p.Requests = append(p.Requests, Request{At: time.Duration(i) * 10 * time.Millisecond, Key: k, Cost: int64(i + 1)})
		}
	}
	return p
}

// Over a real connection: the key and cost go in their headers, a refusal's Retry-After
// is honoured by one retry of the same request when it says, and the exchanges come back
// in the order they were due, retries after the plan naming what they retry.
func TestRunSendsOverTheNetworkAndRetries(t *testing.T) {
	var s seen
	srv := httptest.NewServer(refuseFirst(&s))
	defer srv.Close()
	plan := burstPlan([]string{"alice", "bob"}, 3)
	clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	start := clock.Now().Add(time.Second)
	xs, err := Run(context.Background(), plan, Target{URL: srv.URL, KeyHeader: "X-User", CostHeader: "X-Cost", Concurrency: 4,
		Timeout: 5 * time.Second, HonorRetryAfter: true, MaxRetryWait: 2 * time.Second, RefusedCodes: []int{429}}, clock, start)
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) != 8 {
		t.Fatalf("%d exchanges, want the 6 planned and a retry of each key's refusal", len(xs))
	}
	for i, x := range xs[:6] {
		r := plan.Requests[i]
		if x.Key != r.Key || x.Cost != r.Cost || x.Due != r.At || x.Retry || x.RetryOf != -1 || x.Err != "" {
			t.Errorf("exchange %d %+v, want the planned %+v", i, x, r)
		}
		if want := map[bool]int{true: 429, false: 200}[i < 2]; x.Status != want {
			t.Errorf("exchange %d: status %d, want %d", i, x.Status, want)
		}
		if i < 2 && (!x.HasRetryAfter || x.RetryAfter != time.Second) {
			t.Errorf("exchange %d: Retry-After %v %v", i, x.HasRetryAfter, x.RetryAfter)
		}
		if i >= 2 && (!x.HasQuota || x.Quota.Remaining != 5) {
			t.Errorf("exchange %d: quota %v %+v", i, x.HasQuota, x.Quota)
		}
	}
	for _, x := range xs[6:] {
		of := xs[x.RetryOf]
		if !x.Retry || x.RetryOf > 1 || x.Key != of.Key || x.Cost != of.Cost || x.Due != of.Received+time.Second || x.Status != 200 || x.Sent < x.Due {
			t.Errorf("retry %+v of %+v", x, of)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.key) != 8 || strings.Count(strings.Join(s.cost, ","), "1") != 4 {
		t.Errorf("the server saw keys %v costs %v", s.key, s.cost)
	}
}

// Under KeyAddrs each key comes from an address of its own, 127.0.0.2 for the first.
func TestRunSendsEachKeyFromItsAddress(t *testing.T) {
	var s seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.add(r) }))
	defer srv.Close()
	keys := []string{"k0", "k1", "k2"}
	plan := burstPlan(keys, 2)
	clock := &fakeClock{t: time.Now()}
	xs, err := Run(context.Background(), plan, Target{URL: srv.URL, KeyHeader: "X-User", KeyAddrs: true, Concurrency: 2,
		Timeout: 5 * time.Second, RefusedCodes: []int{429}}, clock, clock.Now())
	if err != nil {
		t.Skipf("this machine cannot send from 127.0.0.x: %v", err)
	}
	if len(xs) != 6 {
		t.Fatalf("%d exchanges", len(xs))
	}
	for i, k := range keys {
		if got, want := s.peers[k], KeyAddr(i).String(); got != want {
			t.Errorf("key %s came from %s, want %s", k, got, want)
		}
	}
	if KeyAddr(0).String() != "127.0.0.2" || KeyAddr(254).String() != "127.0.1.0" || KeyAddr(MaxKeyAddrs-1).String() != "127.255.255.254" {
		t.Errorf("key addresses %s %s %s", KeyAddr(0), KeyAddr(254), KeyAddr(MaxKeyAddrs-1))
	}
}

// A target that cannot be reached fails the probe before anything is sent; so does a
// URL that does not parse.
func TestRunRefusesAnUnreachableTarget(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	clock := &fakeClock{t: time.Now()}
	for _, url := range []string{"http://" + addr + "/", "http://[::1"} {
		xs, err := Run(context.Background(), burstPlan([]string{"a"}, 2), Target{URL: url, Timeout: time.Second}, clock, clock.Now())
		if err == nil || xs != nil {
			t.Errorf("%s: %d exchanges, error %v", url, len(xs), err)
		}
		if strings.HasPrefix(url, "http://127") && !strings.Contains(err.Error(), "connecting to "+addr) {
			t.Errorf("%s: error %v does not name the address", url, err)
		}
	}
}

// A request the target does not answer in time is an exchange with an error and no
// status; the others go on.
func TestRunRecordsTimeouts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-User") == "slow" {
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	clock := &fakeClock{t: time.Now()}
	xs, err := Run(context.Background(), burstPlan([]string{"slow", "quick"}, 1), Target{URL: srv.URL, KeyHeader: "X-User", Concurrency: 2,
		Timeout: 100 * time.Millisecond, RefusedCodes: []int{429}}, clock, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) != 2 || xs[0].Err == "" || xs[0].Status != 0 || xs[1].Err != "" || xs[1].Status != 200 {
		t.Errorf("exchanges %+v", xs)
	}
}

// stopClock is a fakeClock that stops the probe when asked to sleep past stop.
type stopClock struct {
	fakeClock
	stop   time.Time
	cancel context.CancelFunc
}

func (c *stopClock) SleepUntil(ctx context.Context, t time.Time) error {
	if t.After(c.stop) {
		c.cancel()
		return ctx.Err()
	}
	return c.fakeClock.SleepUntil(ctx, t)
}

// Stopped mid-plan, a probe returns what it sent with the context's error, and a retry
// due after the stop is marked unsent.
func TestRunStopsWithItsContext(t *testing.T) {
	// b's second request is refused, with a Retry-After that falls after the stop.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-User") == "b" && r.Header.Get("X-Cost") == "2" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	clock := &stopClock{fakeClock: fakeClock{t: start}, stop: start.Add(2 * time.Second), cancel: cancel}
	plan := Plan{Keys: []string{"a", "b"}}
	for i := range 4 {
		for _, k := range plan.Keys {
			plan.Requests = append(plan.Requests, Request{At: time.Duration(i) * 1500 * time.Millisecond, Key: k, Cost: int64(i + 1)})
		}
	}
	xs, err := Run(ctx, plan, Target{URL: srv.URL, KeyHeader: "X-User", CostHeader: "X-Cost", Concurrency: 1,
		Timeout: 5 * time.Second, HonorRetryAfter: true, MaxRetryWait: 5 * time.Second, RefusedCodes: []int{429}}, clock, start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want the context's", err)
	}
	// Due at 0 and 1.5 s, four planned requests went; the refusal's retry, due 1 s
	// after it, was not.
	if len(xs) != 5 || xs[3].Status != 429 || !xs[4].Retry || !xs[4].Unsent || xs[4].RetryOf != 3 {
		t.Errorf("exchanges %+v", xs)
	}
	for _, x := range xs[:3] {
		if x.Status != 200 || x.Retry {
			t.Errorf("exchange %+v", x)
		}
	}
}

func TestTargetString(t *testing.T) {
	for _, tt := range []struct {
		t    Target
		want string
	}{
		{Target{KeyHeader: "X-User"}, "key in header X-User"},
		{Target{KeyAddrs: true}, "one source address per key from 127.0.0.2"},
		{Target{}, "no key sent"},
	} {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.t, got, tt.want)
		}
	}
}

// The wall clock sleeps until a time to come, returns at once for one past, and early
// when its context ends.
func TestWallClockSleeps(t *testing.T) {
	var c WallClock
	before := c.Now()
	if err := c.SleepUntil(context.Background(), before.Add(5*time.Millisecond)); err != nil || time.Since(before) < 5*time.Millisecond {
		t.Errorf("slept %s, error %v", time.Since(before), err)
	}
	if err := c.SleepUntil(context.Background(), before); err != nil {
		t.Errorf("a time past: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.SleepUntil(ctx, c.Now().Add(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled sleep: %v", err)
	}
	if err := c.SleepUntil(ctx, before); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context and a time past: %v", err)
	}
}
