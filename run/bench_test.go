package run

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/scenario"
)

// loadScaled loads a built-in scenario and cuts its duration, keeping its key space and
// rates, so a benchmark iteration stays short.
func loadScaled(b *testing.B, name string, d time.Duration) *scenario.Scenario {
	b.Helper()
	sc, err := scenario.Load(name)
	if err != nil {
		b.Fatal(err)
	}
	if d > 0 {
		sc.Duration = scenario.Duration(d)
	}
	return sc
}

// benchRun runs sc once per iteration and reports decisions (requests × algorithms)
// per second and nanoseconds per decision.
func benchRun(b *testing.B, sc *scenario.Scenario, o Options) {
	b.Helper()
	b.ReportAllocs()
	var decisions int64
	for b.Loop() {
		rep, err := Run(sc, o)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rep.Results {
			decisions += r.Requests
		}
	}
	b.ReportMetric(float64(decisions)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(decisions), "ns/decision")
}

// BenchmarkCompare is a whole `rlsim compare` of one scenario: 270k requests over 500
// keys, every algorithm and its reference, sequential and on every core.
func BenchmarkCompare(b *testing.B) {
	sc := loadScaled(b, "steady-poisson", 0)
	for _, workers := range []int{1, 0} {
		b.Run(fmt.Sprintf("steady-poisson/workers=%d", workers), func(b *testing.B) {
			benchRun(b, sc, Options{Workers: workers})
		})
	}
}

// BenchmarkMillionKeys is the million-keys scenario cut to 6 minutes (1M requests over
// the same 1M keys), per algorithm and for all of them at once.
func BenchmarkMillionKeys(b *testing.B) {
	sc := loadScaled(b, "million-keys", 6*time.Minute)
	b.Run("all/workers=1", func(b *testing.B) { benchRun(b, sc, Options{Workers: 1}) })
	b.Run("all/workers=0", func(b *testing.B) { benchRun(b, sc, Options{}) })
	for _, name := range algorithms.Defaults() {
		b.Run(name, func(b *testing.B) { benchRun(b, sc, Options{Algorithms: []string{name}, Workers: 1}) })
	}
}
