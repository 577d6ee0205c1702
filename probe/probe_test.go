package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/server"
)

// fakeClock jumps to whatever time a sleeper waits for.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
	return ctx.Err()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// inProcess is a transport that hands each request straight to h, and reads the
// header names of its answer as a client reads them off the wire: canonicalized.
func inProcess(h http.Handler) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		wire := http.Header{}
		for k, v := range res.Header {
			wire[http.CanonicalHeaderKey(k)] = v
		}
		res.Header = wire
		return res, nil
	})
}

// TestProbeMeasuresWhatTheSimulationMeasures sends built-in scenarios through the plan,
// the sender and the judge to rlsim's own server on a clock that jumps to each due time,
// so every request is decided at exactly its scenario time: for every algorithm the probe
// must find the admissions, peak and false allows and rejects that the simulation of the
// same scenario finds.
func TestProbeMeasuresWhatTheSimulationMeasures(t *testing.T) {
	for _, name := range []string{"boundary-burst", "token-burst", "two-counter-timed", "sliding-estimate"} {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		pol := sc.Policy.Policy()
		plan, err := FromScenario(sc, 1, 1, pol.Window, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		for _, alg := range algorithms.Defaults() {
			t.Run(name+"/"+alg, func(t *testing.T) {
				sim, err := run.Run(sc, run.Options{Algorithms: []string{alg}, Workers: 1})
				if err != nil {
					t.Fatal(err)
				}
				want := sim.Results[0]
				clock := &fakeClock{t: sc.EpochTime().Add(-time.Millisecond)}
				lim, _ := algorithms.New(alg, pol)
				h, err := server.New(server.Config{Limiter: lim, Policy: response.Policy{Name: "p", Policy: pol}, Key: "header:X-User",
					MaxDelay: time.Hour, Now: clock.Now, Wait: func(context.Context, time.Duration) bool { return true }})
				if err != nil {
					t.Fatal(err)
				}
				start := plan.Start(clock.Now(), pol.Window)
				if !start.Equal(sc.EpochTime()) {
					t.Fatalf("start %s, want the scenario's epoch phase (%s)", start, sc.EpochTime())
				}
				xs, err := Run(context.Background(), plan, Target{URL: "http://rlsim.test/", KeyHeader: "X-User", Concurrency: 1,
					Timeout: time.Second, RefusedCodes: []int{429}, Transport: inProcess(h)}, clock, start)
				if err != nil {
					t.Fatal(err)
				}
				got := Judge(xs, pol, []int{429})
				if got.Requests != want.Requests || got.Admitted != want.Admitted || got.PeakWindowAdmitted != want.PeakWindowAdmitted ||
					got.FalseAllow != want.FalseAllow || got.FalseReject != want.FalseReject || got.Other != 0 || got.LateMSMax != 0 {
					t.Fatalf("probe %+v\nsimulation %+v", got, want)
				}
				if hc := got.Headers; hc.WithQuota != got.Requests || hc.RemainingBroken != 0 || hc.ResetBroken != 0 || hc.RemainingChecked == 0 {
					t.Fatalf("headers %+v", hc)
				}
			})
		}
	}
}

func TestPlanFromScenario(t *testing.T) {
	sc, err := scenario.Load("boundary-burst")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := FromScenario(sc, 1, 60, time.Second, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Requests) != 200 || len(plan.Keys) != 1 || plan.Keys[0] != "user_8812" || plan.Phase != 0 {
		t.Fatalf("%d requests, keys %v, phase %s", len(plan.Requests), plan.Keys, plan.Phase)
	}
	// 59.9 s and 60.1 s, played sixty times faster.
	if a, b := plan.Requests[0].At, plan.Requests[199].At; a != 998333333 || b != 1001666667 {
		t.Fatalf("first at %s, last at %s", a, b)
	}
	if _, err := FromScenario(sc, 1, 1, time.Minute, 199); err == nil {
		t.Fatal("a plan beyond maxRequests was accepted")
	}
	if _, err := FromScenario(sc, 1, 0, time.Minute, 1000); err == nil {
		t.Fatal("a zero time scale was accepted")
	}
	// A scenario whose epoch falls 15 s into a minute starts 0.25 s into a second at ×60.
	shifted, err := scenario.Parse("shifted.yaml", []byte("name: shifted\nepoch: 2026-01-01T10:00:15Z\npolicy: {limit: 1, window: 1m}\n"+
		"traffic:\n  - script:\n      - {at: 1s, key: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := FromScenario(shifted, 1, 60, time.Second, 10)
	if err != nil || p.Phase != 250*time.Millisecond {
		t.Fatalf("phase %s (%v)", p.Phase, err)
	}
	now := time.Date(2026, 5, 5, 12, 0, 7, 900_000_000, time.UTC)
	if s := p.Start(now, time.Second); !s.Equal(time.Date(2026, 5, 5, 12, 0, 8, 250_000_000, time.UTC)) {
		t.Fatalf("start %s", s)
	}
	if s := p.Start(now, 0); !s.Equal(now) {
		t.Fatalf("unaligned start %s", s)
	}
}

// at is a duration in milliseconds.
func at(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

func TestJudgeOnTheTimesSent(t *testing.T) {
	var xs []Exchange
	for i := range 100 {
		xs = append(xs, Exchange{Key: "k", Cost: 1, Due: at(900), Sent: at(900 + i/50), Received: at(901 + i/50), Status: 200, RetryOf: -1})
	}
	for range 100 {
		xs = append(xs, Exchange{Key: "k", Cost: 1, Due: at(1100), Sent: at(1103), Received: at(1104), Status: 200, RetryOf: -1})
	}
	xs = append(xs,
		Exchange{Key: "k", Cost: 1, Due: at(1200), Sent: at(1200), Received: at(1201), Status: 503, RetryOf: -1},
		Exchange{Key: "k", Cost: 1, Due: at(1200), Sent: at(1200), Err: "connection refused", RetryOf: -1},
		Exchange{Key: "other", Cost: 1, Due: at(1300), Sent: at(1300), Received: at(1301), Status: 429, RetryOf: -1},
	)
	got := Judge(xs, algorithms.Policy{Limit: 100, Window: time.Second}, []int{429})
	if got.Requests != 203 || got.Admitted != 200 || got.Rejected != 1 || got.Other != 2 || got.PeakWindowAdmitted != 200 ||
		got.OverAdmission != 2 || got.FalseAllow != 100 || got.FalseReject != 1 || got.Keys != 2 ||
		got.LateMSMax != 3 || got.AnswerMSMax != 1 || got.OtherStatuses[503] != 1 || got.OtherStatuses[0] != 1 || got.FirstError != "connection refused" {
		t.Fatalf("%+v", got)
	}
	// The window is half-open: the second hundred sent exactly one window after the last
	// fifty of the first leave the peak at 100; a nanosecond earlier, at 150.
	for _, tt := range []struct {
		sent time.Duration
		peak int64
	}{{at(1901), 100}, {at(1901) - 1, 150}} {
		for i := 100; i < 200; i++ {
			xs[i].Sent = tt.sent
		}
		if got := Judge(xs[:200], algorithms.Policy{Limit: 100, Window: time.Second}, []int{429}); got.PeakWindowAdmitted != tt.peak {
			t.Fatalf("second hundred at %s: %+v", tt.sent, got)
		}
	}
}

func TestHeaderChecks(t *testing.T) {
	q := func(r int64, reset int) response.Quota { return response.Quota{Remaining: r, Reset: at(reset)} }
	x := func(sent, recv, status int, quota response.Quota) Exchange {
		return Exchange{Key: "k", Cost: 1, Sent: at(sent), Received: at(recv), Status: status, Quota: quota, HasQuota: true, RetryOf: -1}
	}
	pol := algorithms.Policy{Limit: 2, Window: time.Second}
	tests := []struct {
		name string
		xs   []Exchange
		want HeaderChecks
	}{
		{"remaining kept", []Exchange{x(0, 1, 200, q(1, 1000)), x(10, 11, 200, q(0, 1000))},
			HeaderChecks{WithQuota: 2, RemainingChecked: 1}},
		{"remaining broken", []Exchange{x(0, 1, 200, q(1, 1000)), x(10, 11, 429, q(0, 1000))},
			HeaderChecks{WithQuota: 2, RemainingChecked: 1, RemainingBroken: 1}},
		{"nothing remaining, nothing promised", []Exchange{x(0, 1, 200, q(0, 1000)), x(10, 11, 429, q(0, 1000))},
			HeaderChecks{WithQuota: 2}},
		{"sent before the answer: no check", []Exchange{x(0, 5, 200, q(1, 1000)), x(4, 6, 429, q(0, 1000))},
			HeaderChecks{WithQuota: 2}},
		{"another in flight before: no check", []Exchange{x(0, 8, 200, q(1, 1000)), x(2, 3, 200, q(1, 1000)), x(9, 10, 429, q(0, 1000))},
			HeaderChecks{WithQuota: 3}},
		{"another sent after, before the answer: no check", []Exchange{x(0, 1, 200, q(1, 1000)), x(10, 12, 429, q(0, 1000)), x(11, 13, 200, q(0, 1000))},
			HeaderChecks{WithQuota: 3}},
		{"the next sent as the answer came: checked", []Exchange{x(0, 1, 200, q(1, 1000)), x(10, 12, 429, q(0, 1000)), x(12, 13, 429, q(0, 1000))},
			HeaderChecks{WithQuota: 3, RemainingChecked: 1, RemainingBroken: 1}},
		{"after the reset", []Exchange{x(0, 1, 429, q(0, 500)), x(501, 502, 200, q(1, 1000))},
			HeaderChecks{WithQuota: 2, ResetChecked: 1}},
		{"after the reset, refused", []Exchange{x(0, 1, 429, q(0, 500)), x(501, 502, 429, q(0, 1000))},
			HeaderChecks{WithQuota: 2, ResetChecked: 1, ResetBroken: 1}},
		{"a millisecond before the reset", []Exchange{x(0, 1, 429, q(0, 500)), x(500, 502, 429, q(0, 1000))},
			HeaderChecks{WithQuota: 2}},
	}
	for _, tt := range tests {
		if got := Judge(tt.xs, pol, []int{429}).Headers; got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// Retries: one alone after its refusal, one behind another request.
	xs := []Exchange{
		x(0, 1, 429, q(0, 1000)),
		{Key: "k", Cost: 1, Retry: true, RetryOf: 0, Sent: at(1001), Received: at(1002), Status: 200},
		x(2000, 2001, 429, q(0, 1000)),
		x(2002, 2003, 429, q(0, 1000)),
		{Key: "k", Cost: 1, Retry: true, RetryOf: 2, Sent: at(3001), Received: at(3002), Status: 429},
	}
	got := Judge(xs, pol, []int{429}).Headers
	if got.RetriesSent != 2 || got.RetriesAdmitted != 1 || got.RetryAfterChecked != 1 || got.RetryAfterBroken != 0 {
		t.Errorf("retries: %+v", got)
	}
	xs[1].Status = 429
	if got := Judge(xs, pol, []int{429}).Headers; got.RetryAfterChecked != 1 || got.RetryAfterBroken != 1 {
		t.Errorf("a lone retry refused: %+v", got)
	}
}
