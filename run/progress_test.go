package run

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/rlsim/rlsim/scenario"
)

func TestProgressIsReportedWithoutChangingTheRun(t *testing.T) {
	sc, err := scenario.Parse("busy.yaml", []byte(`name: busy
description: 40000 requests in 20 s over 100 keys
duration: 20s
policy: {limit: 600, window: 10s}
traffic:
  - poisson: {rate: 2000, keys: 100}
`))
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(5)
	plain, err := Run(sc, Options{Seed: &seed, Algorithms: []string{"fixed-window", "gcra"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []Progress
	watched, err := Run(sc, Options{Seed: &seed, Algorithms: []string{"fixed-window", "gcra"}, Progress: func(p Progress) { got = append(got, p) }})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(watched)
	if string(a) != string(b) {
		t.Fatalf("watching changed the result:\n%s\n%s", a, b)
	}
	// Both algorithms decide the traffic in one pass, which reports for both: 40000
	// requests, a report every progressEvery.
	if len(got) != 40000/progressEvery {
		t.Fatalf("%d progress reports", len(got))
	}
	last := got[len(got)-1]
	if last.Algorithm != "2 algorithms" || last.Index != 0 || last.Count != 1 || last.Horizon != 20*time.Second ||
		last.Now <= 0 || last.Now > last.Horizon || last.Requests%progressEvery != 0 {
		t.Fatalf("last report %+v", last)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Index == got[i-1].Index && got[i].Now < got[i-1].Now {
			t.Fatalf("virtual time went back: %+v then %+v", got[i-1], got[i])
		}
	}
}
