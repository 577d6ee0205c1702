package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

// A cluster scenario's folder holds the effective-limit chart: a panel per variant with
// the outage shaded, linked from index.html, byte-identical for the same seed.
func TestFleetEffectiveLimitChart(t *testing.T) {
	run := func(seed string) map[string][]byte {
		dir := t.TempDir()
		_, errOut, code := rlsim(t, "run", "cluster-outage", "--seed", seed, "--charts", "svg", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return readTree(t, dir)
	}
	a, b := run("1"), run("1")
	svg := a["cluster-outage/effective-limit.svg"]
	if svg == nil {
		t.Fatalf("no effective-limit.svg among %d files", len(a))
	}
	if !bytes.Equal(svg, b["cluster-outage/effective-limit.svg"]) {
		t.Error("effective-limit.svg differs between two runs with the same seed")
	}
	for _, want := range []string{"fail-closed · 10 nodes · effective 100 = 1.00×", "fail-open · 10 nodes · effective 3000 = 30.00×",
		"fail-open-local · 10 nodes · effective 200 = 2.00×", "store down", "advertised (100)"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("effective-limit.svg lacks %q", want)
		}
	}
	if _, ok := a["cluster-outage/window-timeline.svg"]; ok {
		t.Error("a fleet run draws the single-limiter window chart beside its effective limit")
	}
	index := string(a["index.html"])
	if !strings.Contains(index, `href="cluster-outage/effective-limit.svg"`) && !strings.Contains(index, "cluster-outage/effective-limit.svg") {
		t.Error("index.html does not include the effective-limit chart")
	}
	summary := string(a["cluster-outage/summary.md"])
	if !strings.Contains(summary, "(effective-limit.svg)") {
		t.Error("summary.md does not link the effective-limit chart")
	}
	if !strings.Contains(summary, "sliding-window@fail-open 30.00× (3000)") {
		t.Error("summary.md's findings do not name the variant")
	}
	// The variants keep apart in the other charts too: one series per algorithm@variant.
	if tl := string(a["cluster-outage/admitted-timeline.svg"]); !strings.Contains(tl, "sliding-window@fail-open-local") {
		t.Error("admitted-timeline.svg does not name the variants")
	}
	// results.csv carries the fleet figures as trailing columns.
	csvText := string(a["cluster-outage/results.csv"])
	if !strings.Contains(csvText, ",effective_limit,") || !strings.Contains(csvText, ",blocked_forever,leaked_keys,") ||
		!strings.Contains(csvText, ",fail-open-local,shared,round-robin,10,10,model,node,0,200,") {
		t.Errorf("results.csv lacks the fleet columns:\n%s", csvText)
	}
	if c := run("2"); bytes.Equal(c["cluster-outage/effective-limit.svg"], svg) {
		t.Error("effective-limit.svg is the same with another seed: the seed does not reach it")
	}
}

// A scale-out is marked where the node count changes, and only there.
func TestFleetChartMarksScaleOut(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := rlsim(t, "run", "cluster-local", "--charts", "svg", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	svg := string(readTree(t, dir)["cluster-local/effective-limit.svg"])
	for _, want := range []string{"scale-out-static · 1→10 nodes · effective 1000 = 10.00×", "ten-nodes-hash · 10 nodes, hash · effective 10 = 0.10×", "scaled to 10 nodes"} {
		if !strings.Contains(svg, want) {
			t.Errorf("effective-limit.svg lacks %q", want)
		}
	}
}

// A scenario whose variants sweep skew also draws the effective limit against the skew: a
// panel per algorithm, a line per clock, the bucket's bound where it applies.
func TestFleetSkewChart(t *testing.T) {
	sc, err := scenario.Load("cluster-skew")
	if err != nil {
		t.Fatal(err)
	}
	// Two algorithms are enough to draw: one window, one bucket with its bound.
	text := regexp.MustCompile(`(?m)^algorithms: .*$`).ReplaceAllString(string(sc.Text), "algorithms: [fixed-window, token-bucket]")
	file := filepath.Join(t.TempDir(), "cluster-skew.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, errOut, code := rlsim(t, "run", file, "--charts", "svg", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files := readTree(t, dir)
	svg := string(files["cluster-skew/effective-limit-skew.svg"])
	for _, want := range []string{"effective limit against node clock skew", "fixed-window", "token-bucket", "node clock", "store clock",
		"bound b + L·(W + 2·skew)/W", "advertised (100)", "node clock skew ± (s)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("effective-limit-skew.svg lacks %q", want)
		}
	}
	if !strings.Contains(string(files["index.html"]), "cluster-skew/effective-limit-skew.svg") {
		t.Error("index.html does not include the skew chart")
	}
	// One skew, no sweep: no such chart.
	dir = t.TempDir()
	rlsim(t, "run", "cluster-two-tier", "--charts", "svg", "--out", dir)
	if _, ok := readTree(t, dir)["cluster-two-tier/effective-limit-skew.svg"]; ok {
		t.Error("cluster-two-tier draws a skew chart with one skew")
	}
}

// --format csv prints the fleet columns too: here the crash's blocked and leaked keys.
func TestFleetCSVOnStdout(t *testing.T) {
	out, errOut, code := rlsim(t, "run", "cluster-nonatomic", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasSuffix(lines[0], ",crashes,blocked_forever,leaked_keys,leaked_bytes,added_latency_ms_mean,added_latency_ms_max,"+
		"added_latency_ms_p50,added_latency_ms_p99,store_latency_ms,store_timeouts,breaker_open_decisions,breaker_opens,stale_reads,lost_writes,"+
		"peer_hops,peer_messages,forward,sync,sync_to,sync_exchanges,ownership_moves,membership_over_admission,failovers,reshards,failover_lag,"+
		"failover_over_admission,free_passes,free_pass_keys,maxmemory,eviction_policy,evicted_keys,oom_errors,store_keys_max,store_bytes_max,partitioned_nodes") {
		t.Fatalf("header %q", lines[0])
	}
	if !strings.HasSuffix(lines[1], ",incr-expire-ttl-window,shared-nonatomic,round-robin,5,5,model,node,0,11,0.3,1,1.2445687952600395,3781,6,0,0,0,0,0,0,0,18,10,8,704,0,0,0,0,0,0,0,0,0,0"+
		",0,0,,0,,0,0,0,0,0,0,0,0,0,0,,0,0,0,0,0") {
		t.Errorf("ttl-window row %q", lines[1])
	}
}

// A fleet's decision rows name their variant, so the variants of one run stay apart.
func TestFleetDecisionsNameTheVariant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.csv")
	_, errOut, code := rlsim(t, "run", "cluster-outage", "--decisions", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		seen[strings.Split(line, ",")[3]]++
	}
	want := map[string]int{"sliding-window@fail-closed": 12684, "sliding-window@fail-open": 12684, "sliding-window@fail-open-local": 12684,
		"sliding-window@fail-open-local-breaker": 12684}
	if len(seen) != len(want) {
		t.Fatalf("algorithms in the decisions file: %v", seen)
	}
	for name, n := range want {
		if seen[name] != n {
			t.Errorf("%s: %d rows, want %d", name, seen[name], n)
		}
	}
}
