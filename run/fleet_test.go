package run

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/store"
)

const clusterHead = `name: c
duration: 1m
policy: {limit: 10, window: 1m}
traffic:
  - script:
      - {at: 1s, count: 5, key: u}
`

// FuzzClusterSection: whatever the scenario decoder accepts, every fleet variant it
// builds must be a fleet cluster.New accepts, and a run must not panic.
func FuzzClusterSection(f *testing.F) {
	for _, n := range scenario.Builtins() {
		if strings.HasPrefix(n, "cluster-") {
			sc, _ := scenario.Load(n)
			f.Add([]byte(sc.Text))
		}
	}
	f.Add([]byte(clusterHead + "cluster: {nodes: 3, placement: two-tier, guard: {limit: 2}}\nfaults: [{outage: {at: 2s, for: 1s, policy: fail-open-local}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scenario.Parse("fuzz.yaml", data)
		if err != nil || sc.Cluster == nil {
			return
		}
		pol := sc.Policy.Policy()
		if store.CheckPolicy(pol) != nil || sc.Horizon() > 10*60e9 {
			return
		}
		for _, v := range fleetVariants(sc, pol) {
			// Global sync to owners runs Gubernator's algorithms, to the store counters.
			algs := v.cfg.Runs([]string{"fixed-window", "token-bucket"})
			if len(algs) == 0 {
				t.Fatalf("variant %s: runs neither fixed-window nor token-bucket", v.name)
			}
			if _, err := cluster.New(v.cfg, algs[0], pol, store.NewModel(), sim.NewRNG(1, sim.RunStream)); err != nil {
				t.Fatalf("variant %s: scenario accepted what the fleet refuses: %v", v.name, err)
			}
		}
	})
}

// The cluster's clock applies to every variant unless one names its own, and a variant's
// skew replaces the skew fault's; the results say which clock and skew each row ran with.
func TestVariantsChooseClockAndSkew(t *testing.T) {
	sc, err := scenario.Parse("c.yaml", []byte(clusterHead+`cluster:
  placement: shared
  clock: store
  variants:
    - {name: as-written}
    - {name: by-node, clock: node, skew: 3s}
    - {name: local, placement: local}
faults: [{skew: {max: 1s}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cluster.Config{}
	for _, v := range fleetVariants(sc, sc.Policy.Policy()) {
		got[v.name] = v.cfg
	}
	if c := got["as-written"]; c.Clock != "store" || c.Skew != 1e9 {
		t.Errorf("as-written: clock %q skew %s, want store and 1s", c.Clock, c.Skew)
	}
	if c := got["by-node"]; c.Clock != "node" || c.Skew != 3e9 {
		t.Errorf("by-node: clock %q skew %s, want node and 3s", c.Clock, c.Skew)
	}
	rep, err := Run(sc, Options{Algorithms: []string{"gcra"}})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range rep.Results {
		rows = append(rows, fmt.Sprintf("%s %q %s", r.Variant, r.Clock, time.Duration(r.Skew)))
	}
	want := []string{`as-written "store" 1s`, `by-node "node" 3s`, `local "" 1s`}
	if strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("rows %v, want %v", rows, want)
	}
}
