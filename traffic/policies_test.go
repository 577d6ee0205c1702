package traffic

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/rlsim/rlsim/response"
)

const ms = time.Millisecond

// Retries are allowed while the token count is above half the maximum: a failure takes
// one token, a success gives back the ratio, kept exactly in thousandths.
func TestRetryThrottleTokens(t *testing.T) {
	th := ThrottleConfig{MaxTokens: 10, TokenRatio: 0.1}.New().(*RetryThrottle)
	observe := func(o Outcome, n int) {
		for range n {
			th.Observe(0, o, 0)
		}
	}
	check := func(step string, tokens float64, allowed bool) {
		t.Helper()
		if th.Tokens() != tokens || th.Retry(0, ServerError) != allowed {
			t.Fatalf("%s: %v tokens, retry %v; want %v, %v", step, th.Tokens(), th.Retry(0, ServerError), tokens, allowed)
		}
	}
	check("start", 10, true)
	observe(Succeeded, 5)
	check("full stays full", 10, true)
	observe(ServerError, 4)
	check("4 failures", 6, true)
	observe(Throttled, 1)
	check("5 failures: exactly half", 5, false)
	observe(ClientError, 3)
	check("a client error says nothing of the server", 5, false)
	observe(Succeeded, 1)
	check("one success lifts it above half", 5.1, true)
	observe(TimedOut, 1)
	check("a timeout is a failure", 4.1, false)
	observe(Succeeded, 9)
	check("nine successes: half again", 5, false)
	observe(Succeeded, 1)
	check("and one more", 5.1, true)
	observe(ServerError, 20)
	check("never below zero", 0, false)
	if w, ok := th.Send(0, false); !ok || w != 0 {
		t.Fatal("throttling never holds a send back")
	}
}

// A retry costs 5 units (10 after a timeout); a success refunds what its request's last
// retry cost, or adds 1 for a first-try success, never above the capacity.
func TestRetryQuotaCostsAndRefunds(t *testing.T) {
	q := QuotaConfig{Capacity: 20, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1}.New().(*RetryQuota)
	steps := []struct {
		name      string
		do        func() bool
		ok        bool
		available int
	}{
		{"retry after a 503", func() bool { return q.Retry(0, ServerError) }, true, 15},
		{"retry after a timeout", func() bool { return q.Retry(0, TimedOut) }, true, 5},
		{"retry after a 429", func() bool { return q.Retry(0, Throttled) }, true, 0},
		{"empty: no retry", func() bool { return q.Retry(0, ServerError) }, false, 0},
		{"a failure refunds nothing", func() bool { q.Observe(0, ServerError, ServerError); return true }, true, 0},
		{"a retried success refunds 5", func() bool { q.Observe(0, Succeeded, ServerError); return true }, true, 5},
		{"a success after a timeout refunds 10", func() bool { q.Observe(0, Succeeded, TimedOut); return true }, true, 15},
		{"a first-try success adds 1", func() bool { q.Observe(0, Succeeded, 0); return true }, true, 16},
		{"capped at the capacity", func() bool { q.Observe(0, Succeeded, TimedOut); return true }, true, 20},
		{"timeout retry with 10 left", func() bool { q.Retry(0, TimedOut); return q.Retry(0, TimedOut) }, true, 0},
		{"not enough for a timeout retry", func() bool { q.Observe(0, Succeeded, ServerError); return q.Retry(0, TimedOut) }, false, 5},
		{"but enough for a plain one", func() bool { return q.Retry(0, ServerError) }, true, 0},
	}
	for _, s := range steps {
		if got := s.do(); got != s.ok || q.Available() != s.available {
			t.Fatalf("%s: ok %v, %d available; want %v, %d", s.name, got, q.Available(), s.ok, s.available)
		}
	}
}

// adaptiveFeed answers the process at 100 per second (every 10 ms) from `from` up to
// (not including) `to`, all successes, and returns the process.
func adaptiveFeed(a *Adaptive, from, to time.Duration) {
	for t := from; t < to; t += 10 * ms {
		a.Observe(t, Succeeded, 0)
	}
}

// The adaptive limiter is off until a throttling answer, then cuts the rate to 0.7 of
// what the process was sending, and grows it back along the cubic, reaching the old rate
// K seconds after the cut.
func TestAdaptiveDropsAndRecoversCubically(t *testing.T) {
	a := DefaultAdaptive.New().(*Adaptive)
	if w, ok := a.Send(0, true); w != 0 || !ok {
		t.Fatal("off: an attempt never waits")
	}
	adaptiveFeed(a, 0, 3*time.Second)
	if a.Enabled() {
		t.Fatal("on before any throttling answer")
	}
	// 100 answers a second, measured per half-second and smoothed: 100/s by now.
	measured := a.MeasuredRate()
	if math.Abs(measured-100) > 1 {
		t.Fatalf("measured %.3f answers/s, want about 100", measured)
	}
	cut := 3 * time.Second
	a.Observe(cut, Throttled, 0)
	// The throttle comes in a new half-second: the measurement moves first.
	measured = a.MeasuredRate()
	if !a.Enabled() || math.Abs(a.FillRate()-0.7*measured) > 1e-9 {
		t.Fatalf("after the throttle: rate %.3f, want 0.7 × %.3f", a.FillRate(), measured)
	}
	w := measured
	k := math.Cbrt(w * 0.3 / 0.4)
	// The cubic from the cut, as long as it stays below twice the measured rate.
	for _, dt := range []float64{0.5, 1, k, k + 0.5} {
		at := cut + time.Duration(dt*float64(time.Second))
		adaptiveFeed(a, cut+10*ms, at)
		a.Observe(at, Succeeded, 0)
		want := min(0.4*math.Pow(dt-k, 3)+w, 2*a.MeasuredRate())
		if math.Abs(a.FillRate()-want) > 1e-6 {
			t.Fatalf("%.2f s after the cut: rate %.6f, want %.6f", dt, a.FillRate(), want)
		}
	}
	if k < 2 || k > 5 {
		t.Fatalf("K = %.2f s: the recovery should take seconds at 100/s", k)
	}
}

// Once on, the limiter paces attempts: with the bucket empty at a rate of r, the n-th
// attempt asking at once waits n/r (at most half a second before it looks again), and a
// waiting attempt that comes back takes the token made meanwhile.
func TestAdaptivePacesAttempts(t *testing.T) {
	a := AdaptiveConfig{Beta: 0.5, Scale: 0.4, MinRate: 0.5}.New().(*Adaptive)
	a.Send(0, true)
	// Measure 10 answers a second for 2 s, then a throttle: rate 0.5 × 10 = 5/s.
	for t := time.Duration(0); t < 2*time.Second; t += 100 * ms {
		a.Observe(t, Succeeded, 0)
	}
	a.Observe(2*time.Second, Throttled, 0)
	rate := a.FillRate()
	if math.Abs(rate-5) > 0.5 {
		t.Fatalf("rate %.3f, want about 5/s", rate)
	}
	now := 2 * time.Second
	// The bucket holds at most max(rate, 1) tokens: spend them.
	for i := 0; a.capacity >= 1; i++ {
		if w, _ := a.Send(now, true); w != 0 || i > 10 {
			t.Fatalf("a token was there: waited %s, or the bucket held more than 10 tokens at 5/s", w)
		}
	}
	left := a.capacity
	var waits []time.Duration
	for n := 1; n <= 4; n++ {
		w, ok := a.Send(now, true)
		if !ok {
			t.Fatal("adaptive never withholds an attempt")
		}
		want := min(time.Duration(math.Ceil((float64(n)-left)/rate*1e9)), maxPacing)
		if w != want {
			t.Fatalf("waiter %d waits %s, want %s", n, w, want)
		}
		waits = append(waits, w)
	}
	if waits[1] <= waits[0] || waits[3] != maxPacing {
		t.Fatalf("waits %v: one more token time per waiter, at most %s", waits, maxPacing)
	}
	// When the first waiter comes back, the token it waited for is there.
	back := now + waits[0]
	if w := a.Resume(back); w != 0 {
		t.Fatalf("the first waiter back after %s waits again %s", waits[0], w)
	}
	if w := a.Resume(back); w <= 0 {
		t.Fatal("the second waiter, back at the same instant, must wait for the next token")
	}
	for range 3 {
		a.Cancel()
	}
	if a.waiting != 0 {
		t.Fatalf("%d attempts still counted waiting after all came back or left", a.waiting)
	}
}

// The breaker's whole cycle on a fixed timeline: a full window at the failure ratio
// opens it; open refuses every attempt for OpenFor, to the nanosecond; half-open lets
// Probes trials through; their success closes it with an empty window, a failed trial
// opens it again.
func TestBreakerTransitions(t *testing.T) {
	b := BreakerConfig{Window: 4, FailureRatio: 0.5, OpenFor: time.Second, Probes: 2}.New().(*Breaker)
	obs := func(at time.Duration, os ...Outcome) {
		for _, o := range os {
			b.Observe(at, o, 0)
		}
	}
	send := func(at time.Duration) bool {
		_, ok := b.Send(at, false)
		return ok
	}
	obs(0, Succeeded, ServerError, Succeeded, ClientError)
	if b.State(0) != Closed || !send(0) {
		t.Fatal("three outcomes (a 4xx does not count) do not fill the window")
	}
	obs(100*ms, Throttled)
	if b.State(100*ms) != Open {
		t.Fatalf("2 failures of 4 at ratio 0.5: %s, want open", b.State(100*ms))
	}
	if send(100*ms) || send(1100*ms-1) {
		t.Fatal("open lets an attempt through before OpenFor has passed")
	}
	obs(500*ms, Succeeded) // an answer to an attempt sent before: changes nothing
	if b.State(1100*ms) != HalfOpen {
		t.Fatal("not half-open after OpenFor")
	}
	if !send(1100*ms) || !send(1200*ms) || send(1200*ms) {
		t.Fatal("half-open lets exactly Probes trials through")
	}
	obs(1300*ms, Succeeded)
	if b.State(1300*ms) != HalfOpen || send(1300*ms) {
		t.Fatal("one successful trial of two does not close it")
	}
	obs(1400*ms, Succeeded)
	if b.State(1400*ms) != Closed || !send(1400*ms) {
		t.Fatal("all trials succeeded: closed")
	}
	obs(1500*ms, TimedOut, TimedOut, TimedOut)
	if b.State(1500*ms) != Closed {
		t.Fatal("closing empties the window: three failures do not fill it")
	}
	obs(1600*ms, Succeeded)
	if b.State(1600*ms) != Open {
		t.Fatal("3 failures of 4: open")
	}
	if !send(2600 * ms) {
		t.Fatal("half-open after OpenFor")
	}
	obs(2700*ms, ServerError)
	if b.State(2700*ms) != Open || send(3700*ms-1) || !send(3700*ms) {
		t.Fatal("a failed trial opens it again for a whole OpenFor")
	}
}

// Policies are composed after a shape, and a policy alone means full jitter with it.
func TestParseStrategy(t *testing.T) {
	cfg := DefaultStrategyConfig(100*ms, 10*time.Second)
	for _, tt := range []struct{ in, want, err string }{
		{"exponential", "exponential", ""},
		{"retry-budget", "full-jitter+retry-budget", ""},
		{"retry-quota+adaptive", "full-jitter+retry-quota+adaptive", ""},
		{"linear+circuit-breaker", "linear+circuit-breaker", ""},
		{"proportional-jitter+retry-throttle", "proportional-jitter+retry-throttle", ""},
		{"fibonacci", "", `unknown backoff shape or policy "fibonacci"`},
		{"exponential+retry-budget+retry-budget", "", `policy "retry-budget" appears twice`},
		{"exponential+full-jitter", "", `unknown policy "full-jitter" (want one of retry-budget`},
		{"exponential+", "", `unknown policy ""`},
	} {
		s, err := ParseStrategy(tt.in, cfg)
		switch {
		case tt.err != "":
			if err == nil || !contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
		case err != nil || s.Name() != tt.want:
			t.Errorf("%q: %v, %v; want %s", tt.in, s.Name(), err, tt.want)
		}
	}
	bad := cfg
	bad.Budget.Ratio = -1
	if err := bad.Validate(); err == nil || !contains(err.Error(), "budget-ratio") {
		t.Errorf("a negative ratio: %v", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestClassify(t *testing.T) {
	ra := http.Header{"Retry-After": {"1"}}
	for _, tt := range []struct {
		r        response.Response
		timedOut bool
		want     Outcome
	}{
		{response.Response{Status: 200}, false, Succeeded},
		{response.Response{Status: 204}, false, Succeeded},
		{response.Response{Status: 429}, false, Throttled},
		{response.Response{Status: 503, Header: ra}, false, Throttled},
		{response.Response{Status: 503, Header: http.Header{response.RetryAfterMsHeader: {"10"}}}, false, Throttled},
		{response.Response{Status: 503}, false, ServerError},
		{response.Response{Status: 500, Header: ra}, false, ServerError},
		{response.Response{Status: 400}, false, ClientError},
		{response.Response{Status: 413}, false, ClientError},
		{response.Response{Status: 200}, true, TimedOut},
	} {
		if got := Classify(tt.r, tt.timedOut); got != tt.want {
			t.Errorf("%d (timed out %v): %s, want %s", tt.r.Status, tt.timedOut, got, tt.want)
		}
	}
}

// A second throttle while the bucket is on cuts from the rate the process was allowed,
// not from what it measured: two throttles in a row leave 0.7 × 0.7 of the measured rate.
func TestAdaptiveCutsFromTheAllowedRate(t *testing.T) {
	a := DefaultAdaptive.New().(*Adaptive)
	adaptiveFeed(a, 0, 3*time.Second)
	a.Observe(3*time.Second, Throttled, 0)
	measured := a.MeasuredRate()
	a.Observe(3*time.Second+10*ms, Throttled, 0) // same half-second: the measurement stays
	if a.MeasuredRate() != measured || math.Abs(a.FillRate()-0.49*measured) > 1e-9 {
		t.Fatalf("rate %.4f after two throttles, want 0.49 × %.4f", a.FillRate(), measured)
	}
}
