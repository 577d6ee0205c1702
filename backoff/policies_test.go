package backoff

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/report"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/traffic"
)

func parse(t *testing.T, cfg traffic.StrategyConfig, names ...string) []traffic.Strategy {
	t.Helper()
	var out []traffic.Strategy
	for _, n := range names {
		s, err := traffic.ParseStrategy(n, cfg)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestPercentilesAreExactNearestRank(t *testing.T) {
	ds := make([]time.Duration, 200)
	for i := range ds {
		ds[i] = time.Duration(200-i) * time.Millisecond // 200 ms down to 1 ms
	}
	p50, p99, most := percentiles(ds)
	if p50 != 100*time.Millisecond || p99 != 198*time.Millisecond || most != 200*time.Millisecond {
		t.Fatalf("p50 %s, p99 %s, max %s; want 100ms, 198ms, 200ms", p50, p99, most)
	}
	if p50, p99, most := percentiles([]time.Duration{7}); p50 != 7 || p99 != 7 || most != 7 {
		t.Fatal("one value is every percentile")
	}
	if p50, _, _ := percentiles(nil); p50 != 0 {
		t.Fatal("no values: zero")
	}
}

// Below its capacity the backend fails nothing: every request is one call. Above it,
// plain retries amplify the load, and a budget caps the amplification: each process may
// retry 10% of its 300 requests plus its reserve of 1 a second, which grows back as the
// window forgets — over the 10 s of arrivals and a TTL after, at most 1 + 0.1 + 20/300.
// The reserve adds to the ratio, so the amplification goes above 1 + 0.1.
func TestOverloadAmplifiesAndABudgetCapsIt(t *testing.T) {
	cfg := traffic.DefaultStrategyConfig(100*time.Millisecond, 10*time.Second)
	cfg.Budget.Ratio, cfg.Budget.MinPerSecond = 0.1, 1
	m := DefaultOverload
	m.Capacity, m.Processes = 200, 10
	calm := Experiment{Model: m, Strategies: parse(t, cfg, "exponential"), Clients: []int{1500}, Runs: 2, Seed: 1}
	rs, err := calm.Run()
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Amplification != 1 || rs[0].Wasted != 0 {
		t.Fatalf("150 a second into a backend of 200: amplification %.3f, wasted %.1f", rs[0].Amplification, rs[0].Wasted)
	}
	storm := Experiment{Model: m, Strategies: parse(t, cfg, "exponential", "exponential+retry-budget"), Clients: []int{3000}, Runs: 2, Seed: 1}
	rs, err = storm.Run()
	if err != nil {
		t.Fatal(err)
	}
	expo, budget := rs[0], rs[1]
	t.Logf("amplification: exponential %.3f, 10%% budget %.3f (give-ups %.1f)", expo.Amplification, budget.Amplification, budget.GiveUps)
	if expo.Amplification <= 2 || expo.GiveUps != 0 {
		t.Errorf("exponential at 1.5x capacity: amplification %.3f, want above 2", expo.Amplification)
	}
	if budget.Amplification > 1+0.1+20.0/300 || budget.Amplification <= 1.1 || budget.Withheld == 0 || budget.GiveUps != budget.Withheld {
		t.Errorf("10%% budget: amplification %.3f, withheld %.1f, give-ups %.1f", budget.Amplification, budget.Withheld, budget.GiveUps)
	}
	if budget.LoadPeak >= expo.LoadPeak {
		t.Errorf("the budget's peak load %.1f is not below plain retries' %.1f", budget.LoadPeak, expo.LoadPeak)
	}
}

// Finagle's budget on clients whose every attempt fails: each process may retry its
// reserve (10 a second over 10 s) plus 20% of its requests, so 1000 clients in one
// process make 1000 + 100 + 200 calls, and in ten processes of 100 each 100 + 100 + 20.
func TestRetryBudgetAddsTheReserveToTheRatio(t *testing.T) {
	cfg := traffic.DefaultStrategyConfig(time.Second, time.Second)
	m := DefaultRateLimited
	m.Hiccup.Duration = 100000 * time.Second
	for _, c := range []struct{ processes, calls int }{{1, 1300}, {10, 2200}} {
		m.Processes = c.processes
		e := Experiment{Model: m, Strategies: parse(t, cfg, "constant+retry-budget"), Clients: []int{1000}, Runs: 1, Seed: 1}
		rs, err := e.Run()
		if err != nil {
			t.Fatal(err)
		}
		if r := rs[0]; r.CallsMean != float64(c.calls) || r.GiveUps != 1000 {
			t.Errorf("%d processes: %.0f calls, %.0f give-ups; want %d and every job given up", c.processes, r.CallsMean, r.GiveUps, c.calls)
		}
	}
}

// The OCC model has no answers for a policy to read: an experiment that asks for one
// fails instead of silently ignoring it.
func TestOCCRefusesPolicies(t *testing.T) {
	cfg := traffic.DefaultStrategyConfig(5*time.Millisecond, 2*time.Second)
	e := Experiment{Model: DefaultOCC, Strategies: parse(t, cfg, "retry-budget"), Clients: []int{10}, Runs: 1}
	if _, err := e.Run(); err == nil || !strings.Contains(err.Error(), "occ") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseErrorMix(t *testing.T) {
	mix, err := ParseErrorMix("503=2%, 503/1500ms=1%,400=0.005")
	if err != nil {
		t.Fatal(err)
	}
	want := ErrorMix{{503, 0, 0.02}, {503, 1500 * time.Millisecond, 0.01}, {400, 0, 0.005}}
	if len(mix) != 3 || mix[0] != want[0] || mix[1] != want[1] || mix[2] != want[2] {
		t.Fatalf("mix %+v", mix)
	}
	if mix.String() != "503=2%,503/1.5s=1%,400=0.5%" {
		t.Fatalf("String %q", mix.String())
	}
	for _, bad := range []struct{ in, want string }{
		{"503", "want CODE=SHARE"},
		{"5xx=1%", `status "5xx" is not a number`},
		{"429=1%", "429 is the limiter's answer"},
		{"302=1%", "not an error"},
		{"400/1s=1%", "only a 5xx carries Retry-After"},
		{"503/soon=1%", "not a positive duration"},
		{"503=lots", "is not a number"},
		{"503=150%", "between 0% and 100%"},
		{"503=60%,500=60%", "add up to at most 100%"},
	} {
		if _, err := ParseErrorMix(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err %v, want %q", bad.in, err, bad.want)
		}
	}
}

// A 4xx belongs to the request: the same requests fail on every attempt, whatever else
// the run draws, and a careful client does not retry them; a naive one retries each to its
// attempt limit, every retry wrong. 5xx of the mix belong to the attempt and are retried.
func TestRateLimitedErrorMix(t *testing.T) {
	m := DefaultRateLimited
	m.Hiccup = Hiccup{Kind: "503"}
	m.Policy.Limit = 1_000_000
	m.Errors, _ = ParseErrorMix("400=10%,503=20%")
	const clients, seed = 1000, 7
	var bad int64
	for c := range clients {
		if requestUniform(seed, c, 0) < 0.1 {
			bad++
		}
	}
	b := strategies(t, "none")[0]
	st := m.Run(b, clients, seed)
	if st.Failed != bad || st.Requests != clients || st.RetriedWrong != 0 {
		t.Fatalf("failed %d, want the %d requests the hash marks bad: %+v", st.Failed, bad, st)
	}
	// The good requests were retried through the 503s until they passed.
	if st.GiveUps != 0 || st.Calls-st.Wasted != clients-bad {
		t.Fatalf("calls %d, wasted %d, give-ups %d", st.Calls, st.Wasted, st.GiveUps)
	}
	m.Retry.RetryAllErrors, m.Retry.MaxAttempts = true, 3
	st = m.Run(b, clients, seed)
	if st.Failed != 0 || st.RetriedWrong != 2*bad || st.GiveUps < bad {
		t.Fatalf("naive clients: failed %d, retried wrongly %d (want %d), give-ups %d", st.Failed, st.RetriedWrong, 2*bad, st.GiveUps)
	}
	// A mix without server errors draws nothing from the run's random source: the run is
	// the one without a mix, request for request, but for the bad requests.
	m.Retry = DefaultRateLimited.Retry
	m.Errors, _ = ParseErrorMix("400=0%")
	plain := DefaultRateLimited
	plain.Hiccup, plain.Policy = m.Hiccup, m.Policy
	if a, b := m.Run(b, 50, 3), plain.Run(b, 50, 3); a.Calls != b.Calls || a.Completion != b.Completion {
		t.Fatalf("an empty 4xx share changed the run: %+v vs %+v", a, b)
	}
}

func TestRateLimitedRetryAfterMs(t *testing.T) {
	m := DefaultRateLimited
	m.RetryAfterMs = true
	m.Errors = ErrorMix{{Status: 503, RetryAfter: 1500 * time.Millisecond, Share: 1}}
	srv := &api{m: m, lim: mustLimiter(t, m), rng: rand.New(rand.NewPCG(1, 1)), done: map[uint64]bool{}, ran: map[[2]int]int{}}
	r := srv.Serve(time.Second, &traffic.Attempt{}).Response
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "2" || r.Header.Get(response.RetryAfterMsHeader) != "1500" {
		t.Fatalf("503 of the mix: %d %v", r.Status, r.Header)
	}
	m.Errors = nil
	m.Policy = algorithms.Policy{Limit: 100, Window: time.Second}
	srv = &api{m: m, lim: mustLimiter(t, m), rng: rand.New(rand.NewPCG(1, 1)), done: map[uint64]bool{}, ran: map[[2]int]int{}}
	for range 100 {
		srv.Serve(time.Second, &traffic.Attempt{})
	}
	r = srv.Serve(time.Second+3*time.Millisecond, &traffic.Attempt{}).Response
	// The next token of 100 a second is 10 ms after the bucket emptied; 3 ms have passed.
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" || r.Header.Get(response.RetryAfterMsHeader) != "7" {
		t.Fatalf("429: %d %v", r.Status, r.Header)
	}
}

func mustLimiter(t *testing.T, m RateLimited) algorithms.Limiter {
	t.Helper()
	lim, err := algorithms.New(m.Algorithm, m.Policy)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// Whole-second Retry-After, sent as an HTTP-date, wakes every client at the same whole
// second of the wall clock: clients that started apart come back together in waves. The
// wait to the millisecond (Retry-After-Ms) keeps them apart.
func TestRetryAfterPrecisionRemovesWholeSecondWaves(t *testing.T) {
	m := DefaultRateLimited
	m.PerClient, m.Requests, m.Spread = true, 20, time.Second
	m.Policy = algorithms.Policy{Limit: 5, Window: time.Second}
	m.Hiccup = Hiccup{Kind: "503"}
	m.Retry.HonorRetryAfter, m.RetryAfterDate = true, true
	run := func(ms bool) report.RetryResult {
		m.RetryAfterMs = ms
		rs, err := Experiment{Model: m, Strategies: strategies(t, "none"), Clients: []int{200}, Runs: 2, Seed: 1, KeepSeries: true}.Run()
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	s, ms := run(false), run(true)
	t.Logf("peak retries per 10 ms: %.1f with whole seconds, %.1f with ms; p50 %.0f ms vs %.0f ms", s.PeakArrivals, ms.PeakArrivals, s.CompletionMSP50, ms.CompletionMSP50)
	if waves := Waves(s.Arrivals, 50); len(waves) < 3 {
		t.Errorf("whole seconds: waves %v, want one every other second", waves)
	}
	if waves := Waves(ms.Arrivals, 50); len(waves) != 0 || ms.PeakArrivals*4 > s.PeakArrivals {
		t.Errorf("ms: waves %v, peak %.1f against %.1f", waves, ms.PeakArrivals, s.PeakArrivals)
	}
	if ms.CompletionMSP50 >= s.CompletionMSP50 {
		t.Errorf("exact waits should finish sooner: p50 %.0f ms vs %.0f ms", ms.CompletionMSP50, s.CompletionMSP50)
	}
}
