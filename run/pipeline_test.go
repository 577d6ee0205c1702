package run

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/internal/redistest"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/store"
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

// storeLines are a cluster section's lines naming the store at url (miniredis when url is
// empty).
func storeLines(url string) string {
	if url == "" {
		return "store: miniredis"
	}
	return fmt.Sprintf("store: redis\n  redis_url: %s", url)
}

// stopScenario is a pipelined fleet run long enough for many batches, on store at url
// (miniredis when url is empty), its keys under prefix.
func stopScenario(url, prefix string) string {
	where := storeLines(url)
	return fmt.Sprintf(`name: stop
seed: 3
duration: 10m
policy: {limit: 30, window: 20s}
algorithms: [fixed-window]
key: user
cluster:
  placement: shared
  nodes: 2
  %s
  prefix: "%s"
traffic:
  - poisson: {rate: 200, keys: 50, key_prefix: user_, end: 10m}
`, where, prefix)
}

// onWrite calls fn on the first write, and then writes nowhere.
type onWrite struct {
	fn   func()
	done bool
}

func (w *onWrite) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		w.fn()
	}
	return len(p), nil
}

// runStopped runs the scenario with pipelines of 64, calling stop once the first
// decisions have been measured, and returns the run's error once no goroutine it started
// is left.
func runStopped(t *testing.T, yaml string, ctx context.Context, stop func()) error {
	t.Helper()
	sc, err := scenario.Parse("stop.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	dw := NewDecisionWriter(csv.NewWriter(&onWrite{fn: stop}))
	_, err = Run(sc, Options{Pipeline: 64, Decisions: dw, StoreStats: &StoreStats{}, Context: ctx})
	for i := 0; runtime.NumGoroutine() > before; i++ {
		if i == 100 {
			t.Fatalf("%d goroutines left after the run, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// A pipelined run cancelled while batches are on their way returns the context's cause,
// leaves no goroutine behind, and deletes what it wrote on a real server.
func TestPipelinedRunStopsWhenCancelled(t *testing.T) {
	urls := []string{""}
	if url := os.Getenv("RLSIM_REDIS_URL"); url != "" {
		urls = append(urls, url)
	}
	for _, url := range urls {
		ctx, cancel := context.WithCancel(context.Background())
		prefix := fmt.Sprintf("rlsim-test:%s:%d:", t.Name(), time.Now().UnixNano())
		err := runStopped(t, stopScenario(url, prefix), ctx, cancel)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("store %q: want the run cancelled, got %v", url, err)
		}
		if url == "" {
			continue
		}
		r, err := store.NewRedis(url)
		if err != nil {
			t.Fatal(err)
		}
		first, err := r.FirstKey(prefix)
		r.Close()
		if err != nil || first != "" {
			t.Fatalf("a key the run wrote is left: %q (%v)", first, err)
		}
	}
}

// A pipelined run whose server goes away stops with the store's error, and leaves no
// goroutine behind.
func TestPipelinedRunStopsOnStoreError(t *testing.T) {
	url, _ := redistest.Start(t)
	r, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	shutdown := func() { r.Client().Shutdown(context.Background()) }
	err = runStopped(t, stopScenario(url, "rlsim-test:"), context.Background(), shutdown)
	if err == nil || !strings.Contains(err.Error(), "store: ") {
		t.Fatalf("want the store's error, got %v", err)
	}
}

// hotKeyScenario is a fleet whose every batch holds calls of one hot key near its limit
// (and of a few others), on store at url (miniredis when url is empty), its keys under
// prefix: a batch's decisions read the counts the batches before it left, so batches on
// their way at once that reached the store, or were measured, out of order would change
// which of the hot key's requests are allowed.
func hotKeyScenario(url, prefix string) string {
	where := storeLines(url)
	return fmt.Sprintf(`name: hot
seed: 5
duration: 12s
policy: {limit: 12, window: 2s}
algorithms: [sliding-window, token-bucket]
key: user
cluster:
  placement: shared
  nodes: 3
  balancer: random
  %s
  prefix: "%s"
traffic:
  - poisson: {rate: 9, keys: 1, key_prefix: hot_, end: 12s}
  - poisson: {rate: 6, keys: 4, key_prefix: user_, end: 12s}
`, where, prefix)
}

// Batches on their way at once decide a hot key as one call at a time does: with
// pipelines of 3, 7 and 16 every one of PipelineDepth batches on their way holds calls of
// the key, on miniredis and on a real server (RLSIM_REDIS_URL), and the JSON report and
// the decisions file are the same bytes as one at a time.
func TestPipelinedBatchesOnTheirWayKeepTheOrder(t *testing.T) {
	urls := []string{""}
	if url := os.Getenv("RLSIM_REDIS_URL"); url != "" {
		urls = append(urls, url)
	}
	for _, url := range urls {
		run := func(batch int) (string, string, StoreStats) {
			prefix := fmt.Sprintf("rlsim-test:%s:%d:%d:", t.Name(), batch, time.Now().UnixNano())
			sc, err := scenario.Parse("hot.yaml", []byte(hotKeyScenario(url, prefix)))
			if err != nil {
				t.Fatal(err)
			}
			var dbuf, jbuf bytes.Buffer
			dw := NewDecisionWriter(csv.NewWriter(&dbuf))
			var stats StoreStats
			rep, err := Run(sc, Options{Pipeline: batch, Decisions: dw, StoreStats: &stats})
			if err != nil {
				t.Fatal(err)
			}
			if err := dw.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := report.WriteJSON(&jbuf, rep); err != nil {
				t.Fatal(err)
			}
			return jbuf.String(), dbuf.String(), stats
		}
		wantJSON, wantDec, one := run(1)
		if !strings.Contains(wantDec, ",false,") || !strings.Contains(wantDec, ",true,") {
			t.Fatalf("store %q: the hot key is never refused or never allowed: the test proves nothing", url)
		}
		for _, batch := range []int{3, 7, 16} {
			gotJSON, gotDec, stats := run(batch)
			if gotDec != wantDec {
				t.Fatalf("store %q, pipeline %d: the decisions file differs from one call at a time", url, batch)
			}
			if gotJSON != wantJSON {
				t.Fatalf("store %q, pipeline %d: the JSON report differs from one call at a time", url, batch)
			}
			if stats.ScriptCalls != one.ScriptCalls || stats.RoundTrips*int64(batch) < one.ScriptCalls/2 {
				t.Fatalf("store %q, pipeline %d: %+v, one at a time %+v", url, batch, stats, one)
			}
		}
	}
}
