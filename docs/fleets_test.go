package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rlsimrun "github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
)

// TestBenchFleetsHaveTheirPeersShape: the fleets scripts/bench.sh (FLEET_ONLY) sets against
// redis-benchmark have the shape its peers are given. fleet-140k-uniform's 150 000 requests
// draw their users at random among 140 000, as -n 150000 -r 140000 draws its keys, so both
// meet about 92 000 keys; fleet-140k gives every request a key of its own, as -r 1000000000
// does. Each is named after its file, which the script's peer keys copy the length of.
func TestBenchFleetsHaveTheirPeersShape(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 290 000 decisions")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bench, err := os.ReadFile(filepath.Join(root, "scripts/bench.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name          string
		requests      [2]int64 // at least, at most
		keys          [2]int
		everyCallAKey bool
	}{
		{"fleet-140k-uniform", [2]int64{148000, 152000}, [2]int{90000, 94000}, false},
		{"fleet-140k", [2]int64{138000, 142000}, [2]int{138000, 142000}, true},
	} {
		file := filepath.Join(root, "scripts/fleets", f.name+".yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := scenario.Parse(file, data)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Name != f.name || sc.Cluster == nil || sc.Cluster.Placement != "shared" {
			t.Fatalf("%s: name %q, cluster %+v: want a shared fleet named after its file", file, sc.Name, sc.Cluster)
		}
		if !strings.Contains(string(bench), "frun \"$b\" "+f.name+"\n") {
			t.Errorf("scripts/bench.sh does not run %s", f.name)
		}
		rep, err := rlsimrun.Run(sc, rlsimrun.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Results[0]
		if r.Requests < f.requests[0] || r.Requests > f.requests[1] || r.Keys < f.keys[0] || r.Keys > f.keys[1] {
			t.Errorf("%s: %d requests over %d keys, want %d–%d over %d–%d", f.name, r.Requests, r.Keys, f.requests[0], f.requests[1], f.keys[0], f.keys[1])
		}
		if everyCall := int64(r.Keys) == r.Requests; everyCall != f.everyCallAKey {
			t.Errorf("%s: %d requests over %d keys: a key for every call is %v, want %v", f.name, r.Requests, r.Keys, everyCall, f.everyCallAKey)
		}
	}
}
