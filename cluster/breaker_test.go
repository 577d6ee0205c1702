package cluster

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/store"
)

// breakerStep is one decision of a fixed timeline: when it comes, and what it should do —
// "wait" (call the store, wait out the timeout), "fast" (the breaker decides, no call) or
// "store" (call the store, which answers) — and the breaker's state after it.
type breakerStep struct {
	at      time.Duration
	want    string
	state   string
	allowed bool
}

// runBreaker decides steps on a one-node shared fleet (1 ms round trip, 50 ms timeout)
// and checks each step.
func runBreaker(t *testing.T, b Breaker, outages []Outage, steps []breakerStep) *Fleet {
	t.Helper()
	c := Config{Nodes: 1, Balancer: "round-robin", Placement: "shared", Latency: time.Millisecond,
		Breaker: &b, Outages: outages, Epoch: epoch, Prefix: "rl:"}
	f, err := New(c, "fixed-window", perMinute, store.NewModel(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	f.SetName(0, "user_1")
	var last Observation
	f.Observe(func(o *Observation) { last = *o })
	for i, s := range steps {
		d := f.Allow(0, epoch+int64(s.at), 1)
		got := "store"
		switch {
		case last.TimedOut && !last.BreakerOpen && last.RoundTrips == 0:
			got = "wait"
		case last.BreakerOpen && !last.TimedOut && last.RoundTrips == 0:
			got = "fast"
		case last.RoundTrips != 1 || last.TimedOut || last.BreakerOpen:
			got = "?"
		}
		state := f.breakers[0].state.String()
		if got != s.want || state != s.state || d.Allowed != s.allowed {
			t.Errorf("step %d at %s: %s, breaker %s, allowed %v; want %s, %s, %v", i, s.at, got, state, d.Allowed, s.want, s.state, s.allowed)
		}
	}
	return f
}

// Closed → open after k consecutive failures (known when each call times out), open
// decisions fail fast, a half-open probe after open_for, failure re-opens, success
// closes; while open the store's recovery goes unnoticed until the probe.
func TestBreakerStateMachine(t *testing.T) {
	ms := time.Millisecond
	down := []Outage{{At: 0, For: 3 * time.Second, Policy: "fail-closed"}}
	f := runBreaker(t, Breaker{Failures: 3, OpenFor: time.Second}, down, []breakerStep{
		{0, "wait", "closed", false},
		{10 * ms, "wait", "closed", false},
		{20 * ms, "wait", "closed", false},
		{49 * ms, "wait", "closed", false}, // no call has timed out yet
		{50 * ms, "wait", "closed", false}, // the first has: one failure
		{70 * ms, "fast", "open", false},   // the third at 70 ms opens it until 1.07 s
		{1070*ms - 1, "fast", "open", false},
		{1070 * ms, "wait", "half-open", false}, // the probe, into the outage
		{1080 * ms, "fast", "half-open", false}, // its answer is not in
		{1120 * ms, "fast", "open", false},      // it failed at 1.12 s: open until 2.12 s
		{2120 * ms, "wait", "half-open", false}, // fails at 2.17 s: open until 3.17 s
		{3000 * ms, "fast", "open", false},      // the store is back; the breaker does not know
		{3170 * ms, "store", "half-open", true}, // the probe gets through (answer at 3.171 s)
		{3171*ms - 1, "fast", "half-open", false},
		{3171 * ms, "store", "closed", true},
	})
	if f.breakers[0].opens != 3 {
		t.Errorf("opened %d times, want 3", f.breakers[0].opens)
	}
}

// A success between failures starts the count again: failures must be consecutive.
func TestBreakerCountsConsecutiveFailures(t *testing.T) {
	ms := time.Millisecond
	outages := []Outage{{At: 0, For: 5 * ms, Policy: "fail-open"}, {At: 100 * ms, For: time.Second, Policy: "fail-open"}}
	runBreaker(t, Breaker{Failures: 2, OpenFor: time.Second}, outages, []breakerStep{
		{0, "wait", "closed", true},        // fails at 50 ms
		{60 * ms, "store", "closed", true}, // answers at 61 ms: the count starts again
		{100 * ms, "wait", "closed", true}, // fails at 150 ms: one failure, not two
		{150 * ms, "wait", "closed", true},
		{200 * ms, "fast", "open", true}, // the second consecutive failure at 200 ms
	})
}

func TestBreakerValidate(t *testing.T) {
	for _, b := range []*Breaker{{Failures: 0, OpenFor: time.Second}, {Failures: 1}, {Failures: 1, OpenFor: -time.Second}} {
		c := Config{Nodes: 1, Balancer: "round-robin", Placement: "shared", Breaker: b}
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: want an error", *b)
		}
	}
	c := Config{Nodes: 1, Balancer: "round-robin", Placement: "shared", StoreTimeout: -1}
	if err := c.Validate(); err == nil {
		t.Error("a negative store timeout: want an error")
	}
}

// Every decision that calls a store that is down waits the client's timeout (default
// 50 ms); a breaker spares most of them the wait.
func TestOutageCostsTheTimeoutUnlessABreakerOpens(t *testing.T) {
	outage := []Outage{{At: time.Minute, For: time.Minute, Policy: "fail-open-local"}}
	c := Config{Nodes: 10, Balancer: "round-robin", Placement: "shared", Outages: outage, Latency: time.Millisecond}
	plain, _ := drive(t, c, "sliding-window", perMinute, store.NewModel(), 5, 10, 3*time.Minute)
	inOutage := plain.OutageAdmitted + plain.OutageRefused
	if plain.StoreTimeouts == 0 || plain.StoreTimeouts > inOutage || plain.BreakerOpenDecisions != 0 {
		t.Errorf("without a breaker: %d timeouts, %d decisions in the outage (guards refuse some first)", plain.StoreTimeouts, inOutage)
	}
	if plain.AddedLatencyP50MS != 1 || plain.AddedLatencyP99MS != 50 || plain.AddedLatencyMaxMS != 50 {
		t.Errorf("without a breaker: p50 %g p99 %g max %g ms, want 1, 50, 50", plain.AddedLatencyP50MS, plain.AddedLatencyP99MS, plain.AddedLatencyMaxMS)
	}
	c.StoreTimeout = 20 * time.Millisecond
	short, _ := drive(t, c, "sliding-window", perMinute, store.NewModel(), 5, 10, 3*time.Minute)
	if short.AddedLatencyP99MS != 20 || short.StoreTimeouts != plain.StoreTimeouts {
		t.Errorf("store_timeout 20ms: p99 %g ms, %d timeouts", short.AddedLatencyP99MS, short.StoreTimeouts)
	}
	c.StoreTimeout = 0
	c.Breaker = &Breaker{Failures: 5, OpenFor: 30 * time.Second}
	broken, _ := drive(t, c, "sliding-window", perMinute, store.NewModel(), 5, 10, 3*time.Minute)
	if broken.BreakerOpenDecisions == 0 || broken.BreakerOpens < 10 || broken.StoreTimeouts*5 > plain.StoreTimeouts {
		t.Errorf("with a breaker: %d fast decisions, %d opens, %d timeouts (without: %d)", broken.BreakerOpenDecisions, broken.BreakerOpens, broken.StoreTimeouts, plain.StoreTimeouts)
	}
	if broken.AddedLatencyP99MS != 1 || broken.AddedLatencyMeanMS >= plain.AddedLatencyMeanMS {
		t.Errorf("with a breaker: p99 %g ms, mean %g (without %g)", broken.AddedLatencyP99MS, broken.AddedLatencyMeanMS, plain.AddedLatencyMeanMS)
	}
}
