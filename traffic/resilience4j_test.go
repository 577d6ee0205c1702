package traffic

import (
	"testing"
	"time"

	"github.com/rlsim/rlsim/response"
)

// A resilience4j breaker, window 4 calls, minimum 3, 50%, wait 1 s, 2 calls half-open,
// walked by hand: nothing is judged below 3 calls; 2 failures of 3 (66.7%) open it; it
// refuses until strictly after the wait; half-open lets 2 through and refuses the third;
// 1 failure of 2 (50%) opens it again; 0 of 2 closes it with an empty window. The
// all-trials-must-pass circuit-breaker would have opened on that single failure too, but
// it also opens on 1 of 2 where this one needs the rate.
func TestResilience4jBreakerHandCase(t *testing.T) {
	cfg := Resilience4jConfig{FailureRateThreshold: 50, SlidingWindowSize: 4, MinimumNumberOfCalls: 3,
		WaitDurationInOpenState: time.Second, PermittedNumberOfCallsInHalfOpenState: 2}
	b := cfg.New().(*Resilience4jBreaker)
	steps := []struct {
		at    time.Duration
		op    string // "send" (want: sent or refused), or an outcome observed
		sent  bool
		state BreakerState
		rate  float64
	}{
		{0, "fail", false, Closed, -1},
		{0, "fail", false, Closed, -1},         // two failures, below the minimum of 3: not judged
		{0, "client-error", false, Closed, -1}, // says nothing of the server
		{0, "ok", false, Open, 200.0 / 3},      // 2 of 3 failed: 66.7% ≥ 50%
		{500 * ms, "send", false, Open, 0},
		{time.Second, "send", false, Open, 0}, // exactly the wait: not after it
		{time.Second + 1, "send", true, HalfOpen, 0},
		{time.Second + 1, "send", true, HalfOpen, 0},
		{time.Second + 1, "send", false, HalfOpen, 0}, // only 2 permitted
		{1100 * ms, "ok", false, HalfOpen, -1},
		{1100 * ms, "fail", false, Open, 50}, // 1 of 2: 50% ≥ 50% opens again
		{2100 * ms, "send", false, Open, 0},
		{2100*ms + 1, "send", true, HalfOpen, 0},
		{2100*ms + 1, "send", true, HalfOpen, 0},
		{2200 * ms, "ok", false, HalfOpen, -1},
		{2200 * ms, "ok", false, Closed, -1}, // 0 of 2: closed, the window emptied
		{2300 * ms, "send", true, Closed, 0},
	}
	for i, s := range steps {
		switch s.op {
		case "send":
			if _, ok := b.Send(s.at, false); ok != s.sent {
				t.Fatalf("step %d at %s: sent %v, want %v", i, s.at, ok, s.sent)
			}
		case "ok":
			b.Observe(s.at, Succeeded, 0)
		case "fail":
			b.Observe(s.at, ServerError, 0)
		case "client-error":
			b.Observe(s.at, ClientError, 0)
		}
		if b.State() != s.state {
			t.Fatalf("step %d at %s (%s): %s, want %s", i, s.at, s.op, b.State(), s.state)
		}
		if s.op != "send" && b.state != Open && float32(b.FailureRate()) != float32(s.rate) {
			t.Fatalf("step %d at %s (%s): failure rate %g, want %g", i, s.at, s.op, b.FailureRate(), s.rate)
		}
	}
}

// The window slides: with a window of 4 and a minimum of 4, failures at the start leave
// it as successes come, and a rate just below the threshold keeps it closed; an answer
// arriving while open is dropped.
func TestResilience4jBreakerSlidesAndDropsWhileOpen(t *testing.T) {
	cfg := Resilience4jConfig{FailureRateThreshold: 75, SlidingWindowSize: 4, MinimumNumberOfCalls: 4,
		WaitDurationInOpenState: time.Second, PermittedNumberOfCallsInHalfOpenState: 3}
	b := cfg.New().(*Resilience4jBreaker)
	for _, o := range []Outcome{ServerError, ServerError, Succeeded, ServerError} { // 3 of 4 = 75%
		b.Observe(0, o, 0)
	}
	if b.State() != Open {
		t.Fatalf("75%% of 4 failed: %s, want open", b.State())
	}
	b.Observe(0, Succeeded, 0) // late, while open: dropped
	b = cfg.New().(*Resilience4jBreaker)
	for _, o := range []Outcome{ServerError, ServerError, Succeeded, Succeeded, ServerError, Succeeded} {
		b.Observe(0, o, 0) // the window ends [s, s, f, s]: 25%
	}
	if b.State() != Closed || b.FailureRate() != 25 {
		t.Fatalf("after the window slid: %s at %g%%, want closed at 25%%", b.State(), b.FailureRate())
	}
	// The minimum above the window is capped at the window, as resilience4j caps it.
	capped := Resilience4jConfig{FailureRateThreshold: 50, SlidingWindowSize: 2, MinimumNumberOfCalls: 100,
		WaitDurationInOpenState: time.Second, PermittedNumberOfCallsInHalfOpenState: 1}.New().(*Resilience4jBreaker)
	capped.Observe(0, ServerError, 0)
	capped.Observe(0, Succeeded, 0)
	if capped.State() != Open {
		t.Fatalf("window 2, minimum 100 (capped to 2), 1 of 2 failed: %s, want open", capped.State())
	}
	if err := (Resilience4jConfig{FailureRateThreshold: 0, SlidingWindowSize: 1, MinimumNumberOfCalls: 1, WaitDurationInOpenState: 1, PermittedNumberOfCallsInHalfOpenState: 1}).validate(); err == nil {
		t.Fatal("a threshold of 0% opens on nothing: refused")
	}
	if err := DefaultResilience4j.validate(); err != nil {
		t.Fatal(err)
	}
}

// The AWS standard mode's quota bounds a request to 3 attempts: a server that fails every
// first and second try and passes the third still gets three calls a request; one that
// passes only the fourth sees the request given up after three, the quota not empty.
func TestRetryQuotaCapsAttempts(t *testing.T) {
	passOn := func(n int) *answering {
		return &answering{answer: func(a *Attempt) response.Response {
			if a.Number >= n {
				return status(200)
			}
			return status(503)
		}}
	}
	retry := Retry{Policies: []PolicyMaker{DefaultQuota}}
	st := runPop(t, passOn(3), retry, 1, Job{Requests: 1}, Job{Requests: 1})
	if st.Calls != 6 || st.Done != 2 || st.GiveUps != 0 {
		t.Fatalf("passing on the third try: %+v", st)
	}
	st = runPop(t, passOn(4), retry, 1, Job{Requests: 1}, Job{Requests: 1})
	if st.Calls != 6 || st.GiveUps != 2 || st.Withheld != 0 {
		t.Fatalf("passing on the fourth try: %d calls, %d give-ups, %d withheld; want 6, 2 at the cap, 0", st.Calls, st.GiveUps, st.Withheld)
	}
	// The client's own limit, when tighter, wins; 0 lifts the quota's bound.
	retry.MaxAttempts = 2
	if st = runPop(t, passOn(4), retry, 1, Job{Requests: 1}); st.Calls != 2 {
		t.Fatalf("client limit 2 under the quota's 3: %d calls", st.Calls)
	}
	noCap := DefaultQuota
	noCap.MaxAttempts = 0
	if st = runPop(t, passOn(4), Retry{Policies: []PolicyMaker{noCap}}, 1, Job{Requests: 1}); st.Calls != 4 || st.Done != 1 {
		t.Fatalf("no cap: %d calls, %d done", st.Calls, st.Done)
	}
}
