package sweep

import (
	"fmt"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

// BenchmarkSweep is an 8-point sweep of steady-poisson cut to one minute, on 1 worker and
// on 2: their ratio is the sweep's parallel speed-up on this machine.
func BenchmarkSweep(b *testing.B) {
	sc, err := scenario.Load("steady-poisson")
	if err != nil {
		b.Fatal(err)
	}
	sc.Duration = scenario.Duration(60e9)
	var params []Param
	for _, s := range []string{"policy.burst=10,30,60,120", "policy.window=30s,1m"} {
		p, err := ParseParam(s)
		if err != nil {
			b.Fatal(err)
		}
		params = append(params, p)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				if _, err := Run(sc, params, Options{Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleParseParam() {
	p, err := ParseParam("policy.window=1s,10s,1m")
	fmt.Println(p.Name, p.Values, err)
	_, err = ParseParam("policy.colour=red")
	fmt.Println(err)
	// Output:
	// policy.window [1s 10s 1m] <nil>
	// "policy.colour=red": unknown parameter "policy.colour" (want one of policy.limit, policy.window, policy.burst, seed, duration, cluster.sync, cluster.sync_to, cluster.nodes, cluster.failover_lag, cluster.maxmemory, cluster.eviction_policy)
}

func ExamplePointValues() {
	params := []Param{{Name: "policy.limit", Values: []string{"50", "100"}}, {Name: "seed", Values: []string{"1", "2", "3"}}}
	for i := range Size(params) {
		fmt.Println(i, PointValues(params, i), Shard{K: 2, N: 3}.Owns(i))
	}
	// Output:
	// 0 [50 1] false
	// 1 [50 2] true
	// 2 [50 3] false
	// 3 [100 1] false
	// 4 [100 2] true
	// 5 [100 3] false
}

func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"1/1", "2/3", "0/3", "4/3", "a/b", "1/3/5", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShard(s)
		if err != nil {
			return
		}
		if sh.K < 1 || sh.K > sh.N {
			t.Fatalf("accepted %q as %+v", s, sh)
		}
		// Shard K owns points K−1, K−1+N, …, and no other shard owns them.
		for _, point := range []int{sh.K - 1, sh.K - 1 + sh.N} {
			if !sh.Owns(point) {
				t.Fatalf("%+v does not own point %d", sh, point)
			}
			if other := (Shard{K: sh.K%sh.N + 1, N: sh.N}); other != sh && other.Owns(point) {
				t.Fatalf("%+v and %+v both own point %d", sh, other, point)
			}
		}
	})
}
