package run

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// pipelineScenario runs on miniredis with the placements that pipeline (shared with two
// outage policies, two-tier; clocks skewed, nodes scaled) and one that does not (leased),
// so one file covers both paths of runFleet.
const pipelineScenario = `name: pipe
seed: 3
duration: 1m
policy: {limit: 30, window: 20s}
algorithms: [sliding-window, sliding-log]
key: user
cluster:
  placement: shared
  nodes: 4
  balancer: random
  store: miniredis
  scale: [{at: 30s, nodes: 6}]
  variants:
    - {name: closed, outage_policy: fail-closed}
    - {name: local-guard, outage_policy: fail-open-local}
    - {name: two-tier, placement: two-tier}
    - {name: leased, placement: leased}
faults:
  - outage: {at: 20s, for: 10s, policy: fail-closed}
  - skew: {max: 500ms}
traffic:
  - script:
      - {at: 0s, count: 150, key: user_1, spread: 1m}
  - poisson: {rate: 3, keys: 8, key_prefix: user_, end: 1m}
`

// runPipelined runs the scenario with pipelines of batch decisions and returns its JSON
// report, its decisions file and what it sent to the store.
func runPipelined(t *testing.T, batch int) (string, string, StoreStats) {
	t.Helper()
	sc, err := scenario.Parse("pipe.yaml", []byte(pipelineScenario))
	if err != nil {
		t.Fatal(err)
	}
	var dbuf bytes.Buffer
	dw := NewDecisionWriter(csv.NewWriter(&dbuf))
	var stats StoreStats
	rep, err := Run(sc, Options{Pipeline: batch, Decisions: dw, StoreStats: &stats})
	if err != nil {
		t.Fatal(err)
	}
	if err := dw.Flush(); err != nil {
		t.Fatal(err)
	}
	var jbuf bytes.Buffer
	if err := report.WriteJSON(&jbuf, rep); err != nil {
		t.Fatal(err)
	}
	return jbuf.String(), dbuf.String(), stats
}

// A fleet run on a Redis store gives the same bytes pipelined as one call at a time: the
// JSON report and every row of the decisions file, in the same order.
func TestPipelinedFleetRunIsIdentical(t *testing.T) {
	wantJSON, wantDec, one := runPipelined(t, 1)
	for _, batch := range []int{16} {
		gotJSON, gotDec, stats := runPipelined(t, batch)
		if gotJSON != wantJSON {
			t.Fatalf("pipeline %d: the JSON report differs from one call at a time", batch)
		}
		if gotDec != wantDec {
			t.Fatalf("pipeline %d: the decisions file differs from one call at a time", batch)
		}
		if stats.ScriptCalls != one.ScriptCalls {
			t.Fatalf("pipeline %d: %d script calls, one by one %d", batch, stats.ScriptCalls, one.ScriptCalls)
		}
		if stats.RoundTrips >= one.RoundTrips/2 {
			t.Fatalf("pipeline %d: %d round trips, one by one %d: the calls were not batched", batch, stats.RoundTrips, one.RoundTrips)
		}
	}
	if one.ScriptCalls == 0 || one.RoundTrips < one.ScriptCalls {
		t.Fatalf("one by one: %+v", one)
	}
}
