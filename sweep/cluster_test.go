package sweep

import (
	"strings"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

func TestParseClusterParams(t *testing.T) {
	for _, good := range []string{"cluster.sync=0s,10ms,1s", "cluster.sync_to=owner,store", "cluster.nodes=1,3,10",
		"cluster.failover_lag=0s,1s,5s", "cluster.maxmemory=224kb,1mb,1048576", "cluster.eviction_policy=allkeys-lru,noeviction"} {
		if _, err := ParseParam(good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for bad, want := range map[string]string{
		"cluster.sync=-1s":                    "cluster.sync: want a duration",
		"cluster.sync=soon":                   "cluster.sync: want a duration",
		"cluster.sync_to=moon":                `cluster.sync_to: want one of owner, store, got "moon"`,
		"cluster.nodes=0":                     "cluster.nodes: want a whole number of nodes between 1 and 100000",
		"cluster.colour=red":                  `unknown parameter "cluster.colour"`,
		"cluster.nodes=3,3":                   `value "3" given twice`,
		"cluster.sync=1s,soon":                "cluster.sync: want a duration",
		"cluster.failover_lag=-1s":            "cluster.failover_lag: want a duration",
		"cluster.maxmemory=0":                 "cluster.maxmemory: want a positive size",
		"cluster.maxmemory=3zb":               "cluster.maxmemory: want a positive size",
		"cluster.eviction_policy=allkeys-lfu": `cluster.eviction_policy: want one of allkeys-lru, volatile-ttl, noeviction, got "allkeys-lfu"`,
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

// A sweep over a failover's lag gives the over-admission burst it costs, and one over the
// store's maxmemory the free passes eviction hands out: more lag, more over-admission; less
// memory, more; the scenario's own faults are left as they were.
func TestSweepOverFailoverLagAndMaxMemory(t *testing.T) {
	sc := mustLoad(t, "cluster-failover")
	lag := sc.Faults[0].Spec.(*scenario.FailoverSpec).Lag
	res, err := Run(sc, []Param{{Name: "cluster.failover_lag", Values: []string{"0s", "5s"}}}, Options{Algorithms: []string{"fixed-window"}})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := res.Rows[0].Results[0].OverAdmission, res.Rows[1].Results[0].OverAdmission; !(a < b) {
		t.Errorf("fixed-window over-admission at lag 0s %.2f, at 5s %.2f: want more with the lag", a, b)
	}
	if sc.Faults[0].Spec.(*scenario.FailoverSpec).Lag != lag {
		t.Error("the sweep changed the scenario's failover")
	}

	sc = mustLoad(t, "cluster-eviction")
	maxmemory := sc.Faults[0].Spec.(*scenario.EvictionSpec).MaxMemory
	res, err = Run(sc, []Param{{Name: "cluster.maxmemory", Values: []string{"224kb", "1536kb"}}, {Name: "cluster.eviction_policy", Values: []string{"allkeys-lru", "noeviction"}}},
		Options{Algorithms: []string{"fixed-window"}})
	if err != nil {
		t.Fatal(err)
	}
	admitted := map[string]int64{}
	for _, row := range res.Rows {
		admitted[row.Values[0]+"/"+row.Values[1]] = row.Results[0].Admitted
	}
	if !(admitted["224kb/allkeys-lru"] > admitted["1536kb/allkeys-lru"]) || admitted["224kb/noeviction"] >= admitted["224kb/allkeys-lru"] {
		t.Errorf("admitted %v: want more through a smaller store under allkeys-lru, fewer under noeviction failing closed", admitted)
	}
	if sc.Faults[0].Spec.(*scenario.EvictionSpec).MaxMemory != maxmemory {
		t.Error("the sweep changed the scenario's eviction fault")
	}
	for _, c := range []struct{ scenario, param, want string }{
		{"cluster-eviction", "cluster.failover_lag=1s", "no failover fault"},
		{"cluster-failover", "cluster.maxmemory=1mb", "no eviction fault"},
	} {
		p, err := ParseParam(c.param)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(mustLoad(t, c.scenario), []Param{p}, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %s: %v, want %q", c.param, c.scenario, err, c.want)
		}
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
