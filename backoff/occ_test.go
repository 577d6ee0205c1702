package backoff

import (
	"reflect"
	"testing"
	"time"

	"github.com/rlsim/rlsim/report"

	"github.com/rlsim/rlsim/traffic"
)

func strategies(t *testing.T, names ...string) []traffic.Strategy {
	t.Helper()
	var out []traffic.Strategy
	for _, n := range names {
		b, err := traffic.NewBackoff(n, 5*time.Millisecond, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, traffic.Plain(b))
	}
	return out
}

func byStrategy(rs []report.RetryResult) map[string]report.RetryResult {
	m := map[string]report.RetryResult{}
	for _, r := range rs {
		m[r.Strategy] = r
	}
	return m
}

// TestOCCReproducesBrookersFindings checks the shape of the blog's results at 100 clients
// on fewer runs than the command's default, to stay fast: the order of the calls, full
// jitter under half of exponential's calls, exponential by far the slowest, and equal
// jitter finishing after full jitter.
func TestOCCReproducesBrookersFindings(t *testing.T) {
	e := Experiment{Model: DefaultOCC, Clients: []int{100}, Runs: 40, Seed: 1,
		Strategies: strategies(t, "none", "exponential", "full-jitter", "equal-jitter", "decorrelated-jitter")}
	rs, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	m := byStrategy(rs)
	none, expo, full, equal, decor := m["none"], m["exponential"], m["full-jitter"], m["equal-jitter"], m["decorrelated-jitter"]
	t.Logf("calls: none %.0f expo %.0f decor %.0f equal %.0f full %.0f", none.CallsMean, expo.CallsMean, decor.CallsMean, equal.CallsMean, full.CallsMean)
	t.Logf("completion ms: none %.0f expo %.0f decor %.0f equal %.0f full %.0f", none.CompletionMSMean, expo.CompletionMSMean, decor.CompletionMSMean, equal.CompletionMSMean, full.CompletionMSMean)
	if !(none.CallsMean > expo.CallsMean && expo.CallsMean > decor.CallsMean && decor.CallsMean > equal.CallsMean) {
		t.Errorf("calls not ordered none > exponential > decorrelated > equal")
	}
	if r := equal.CallsMean / full.CallsMean; r < 0.9 || r > 1.15 {
		t.Errorf("equal-jitter calls / full-jitter calls = %.2f, want about 1", r)
	}
	if full.CallsMean >= expo.CallsMean/2 {
		t.Errorf("full-jitter %.0f calls, want fewer than half of exponential's %.0f", full.CallsMean, expo.CallsMean)
	}
	for _, r := range []report.RetryResult{none, full, equal, decor} {
		if expo.CompletionMSMean < 5*r.CompletionMSMean {
			t.Errorf("exponential finishes in %.0f ms, not by far the slowest next to %s's %.0f ms", expo.CompletionMSMean, r.Strategy, r.CompletionMSMean)
		}
	}
	if equal.CompletionMSMean <= full.CompletionMSMean {
		t.Errorf("equal-jitter finishes in %.0f ms, not after full-jitter's %.0f ms", equal.CompletionMSMean, full.CompletionMSMean)
	}
	for _, r := range rs {
		if r.Runs != 40 || r.GiveUps != 0 || r.Duplicates != 0 || r.PeakArrivals <= 0 {
			t.Errorf("%s: %+v", r.Strategy, r)
		}
	}
}

func TestExperimentIsTheSameOnAnyNumberOfWorkers(t *testing.T) {
	e := Experiment{Model: DefaultOCC, Clients: []int{5, 20}, Runs: 7, Seed: 42, KeepSeries: true,
		Strategies: strategies(t, "exponential", "full-jitter", "decorrelated-jitter")}
	e.Workers = 1
	one, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	e.Workers = 5
	many, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, many) {
		t.Fatalf("1 worker: %+v\n5 workers: %+v", one, many)
	}
	e.Seed = 43
	other, _ := e.Run()
	if reflect.DeepEqual(one, other) {
		t.Fatal("another seed gave the same results")
	}
}

func TestOCCMaxAttemptsAndDeadline(t *testing.T) {
	const clients = 50
	b := strategies(t, "exponential")[0]

	m := DefaultOCC
	m.MaxAttempts = 3
	st := m.Run(b, clients, 9)
	if st.Calls > clients*3 {
		t.Errorf("max 3 attempts: %d write calls from %d clients", st.Calls, clients)
	}
	if st.GiveUps == 0 || st.GiveUps >= clients {
		t.Errorf("max 3 attempts: %d give-ups of %d clients", st.GiveUps, clients)
	}

	m = DefaultOCC
	m.Deadline = 500 * time.Millisecond
	st = m.Run(b, clients, 9)
	// A client stops before a sleep that would cross the deadline, so it finishes within
	// the deadline plus one attempt (four hops of about 10 ms) and the last reply hop.
	if st.Completion > m.Deadline+100*time.Millisecond {
		t.Errorf("deadline %s: last client finished at %s", m.Deadline, st.Completion)
	}
	if st.GiveUps == 0 {
		t.Error("deadline 500ms with 50 clients on exponential backoff: nobody gave up")
	}

	free := DefaultOCC.Run(b, clients, 9)
	if free.GiveUps != 0 || free.Completion <= st.Completion {
		t.Errorf("no limits: %d give-ups, finished at %s", free.GiveUps, free.Completion)
	}
}

func TestOCCOneClientWritesOnce(t *testing.T) {
	st := DefaultOCC.Run(strategies(t, "none")[0], 1, 1)
	if st.Calls != 1 || peak(st.Attempts) != 1 || len(st.Retries) != 0 || st.Completion < 20*time.Millisecond || st.Completion > 70*time.Millisecond {
		t.Fatalf("one client: %+v", st)
	}
}

func TestRunSeedIsStableAndSpread(t *testing.T) {
	if RunSeed(1, 100, 0) != RunSeed(1, 100, 0) {
		t.Fatal("RunSeed is not a function")
	}
	seen := map[uint64]bool{}
	for c := 1; c <= 50; c++ {
		for r := range 50 {
			seen[RunSeed(7, c, r)] = true
		}
	}
	if len(seen) != 2500 {
		t.Fatalf("%d distinct seeds of 2500", len(seen))
	}
}

func newBackoffForTest(name string, base, cap time.Duration) (traffic.Backoff, error) {
	return traffic.NewBackoff(name, base, cap)
}

// BenchmarkOCCRun is one run of the experiment at 100 clients per strategy: about
// ten thousand events (none) to a few thousand (jittered), each a pop and a push on the
// event loop, the cost the 19 × 100 × 4 sweep of `rlsim backoff` pays 7,600 times.
func BenchmarkOCCRun(b *testing.B) {
	for _, name := range []string{"none", "exponential", "full-jitter"} {
		s, err := traffic.NewBackoff(name, 5*time.Millisecond, 2*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			seed := uint64(0)
			for b.Loop() {
				seed++
				DefaultOCC.Run(traffic.Plain(s), 100, seed)
			}
		})
	}
}
