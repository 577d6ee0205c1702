package backoff

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// BenchmarkOCCSweep is the full sweep of the optimistic-concurrency experiment, as
// `rlsim backoff --model occ --clients 10..190/10 --runs 100 --strategies
// none,exponential,full-jitter,equal-jitter,decorrelated-jitter` runs it: 19 client
// counts × 100 runs × 5 strategies, on one worker and on every core (workers=0).
func BenchmarkOCCSweep(b *testing.B) {
	var strats []traffic.Strategy
	for _, n := range []string{"none", "exponential", "full-jitter", "equal-jitter", "decorrelated-jitter"} {
		s, err := traffic.NewBackoff(n, 5*time.Millisecond, 2*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		strats = append(strats, traffic.Plain(s))
	}
	var clients []int
	for c := 10; c <= 190; c += 10 {
		clients = append(clients, c)
	}
	for _, workers := range []int{1, 0} { // 0: one per CPU
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			e := Experiment{Model: DefaultOCC, Strategies: strats, Clients: clients, Runs: 100, Seed: 1, Workers: workers}
			for b.Loop() {
				if _, err := e.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
