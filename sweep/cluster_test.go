package sweep

import (
	"strings"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

func TestParseClusterParams(t *testing.T) {
	for _, good := range []string{"cluster.sync=0s,10ms,1s", "cluster.sync_to=owner,store", "cluster.nodes=1,3,10"} {
		if _, err := ParseParam(good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for bad, want := range map[string]string{
		"cluster.sync=-1s":     "cluster.sync: want a duration",
		"cluster.sync=soon":    "cluster.sync: want a duration",
		"cluster.sync_to=moon": `cluster.sync_to: want one of owner, store, got "moon"`,
		"cluster.nodes=0":      "cluster.nodes: want a whole number of nodes between 1 and 100000",
		"cluster.colour=red":   `unknown parameter "cluster.colour"`,
		"cluster.nodes=3,3":    `value "3" given twice`,
		"cluster.sync=1s,soon": "cluster.sync: want a duration",
	} {
		if _, err := ParseParam(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %s", bad, err, want)
		}
	}
}

// A sweep over the sync interval of a global-sync fleet gives its over-admission curve:
// exact at 0s, more the longer the interval, more with more nodes; the scenario's
// variants are left out and the scenario itself is left as it was.
func TestSweepOverTheSyncInterval(t *testing.T) {
	sc, err := scenario.Load("cluster-global-sync")
	if err != nil {
		t.Fatal(err)
	}
	variants := len(sc.Cluster.Variants)
	params := []Param{{Name: "cluster.sync", Values: []string{"0s", "100ms", "1s", "5s"}}, {Name: "cluster.nodes", Values: []string{"3", "10"}}}
	res, err := Run(sc, params, Options{Algorithms: []string{"sliding-window"}})
	if err != nil {
		t.Fatal(err)
	}
	over := map[string]float64{}
	for _, row := range res.Rows {
		if len(row.Results) != 1 {
			t.Fatalf("point %v: %d results, want the cluster section's fleet alone", row.Values, len(row.Results))
		}
		over[row.Values[0]+"/"+row.Values[1]] = row.Results[0].OverAdmission
	}
	if over["0s/10"] != 1 || over["0s/3"] != 1 {
		t.Errorf("synchronous: %v, want 1.00 at both node counts", over)
	}
	for _, n := range []string{"3", "10"} {
		if !(over["100ms/"+n] <= over["1s/"+n] && over["1s/"+n] < over["5s/"+n]) {
			t.Errorf("%s nodes: over-admission %v does not grow with the interval", n, over)
		}
	}
	if over["5s/10"] <= over["5s/3"] {
		t.Errorf("5s: 10 nodes %.2f, 3 nodes %.2f; want more with more nodes", over["5s/10"], over["5s/3"])
	}
	if len(sc.Cluster.Variants) != variants || sc.Cluster.Sync != nil {
		t.Error("the sweep changed the scenario it was given")
	}
	if _, err := Run(mustLoad(t, "cluster-owner"), []Param{{Name: "cluster.sync", Values: []string{"1s"}}}, Options{}); err == nil ||
		!strings.Contains(err.Error(), "not global-sync") {
		t.Errorf("cluster.sync on an owner fleet: %v", err)
	}
	if _, err := Run(mustLoad(t, "boundary-burst"), []Param{{Name: "cluster.nodes", Values: []string{"2"}}}, Options{}); err == nil ||
		!strings.Contains(err.Error(), "no cluster section") {
		t.Errorf("cluster.nodes without a cluster: %v", err)
	}
}

func mustLoad(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
