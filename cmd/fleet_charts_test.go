package cmd

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// A cluster scenario's folder holds the effective-limit chart: a panel per variant with
// the outage shaded, linked from index.html, byte-identical for the same seed.
func TestFleetEffectiveLimitChart(t *testing.T) {
	t.Parallel()
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
	// results.csv carries the fleet figures.
	rows := csvRecords(t, string(a["cluster-outage/results.csv"]))
	if len(rows) != 4 || rows[2]["variant"] != "fail-open-local" || rows[2]["placement"] != "shared" || rows[2]["nodes"] != "10" ||
		rows[2]["store"] != "model" || rows[2]["effective_limit"] != "200" || rows[2]["guard_limit"] != "20" || rows[2]["blocked_forever"] != "0" {
		t.Errorf("results.csv lacks the fleet figures: %v", rows)
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
	t.Parallel()
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
	rows := csvRecords(t, out)
	ttl := rows[0]
	for name, want := range map[string]string{
		"kind": "result", "variant": "incr-expire-ttl-window", "placement": "shared-nonatomic", "nodes": "5", "store": "model",
		"effective_limit": "11", "store_round_trips": "1.2445687952600395", "crashes": "18", "blocked_forever": "10",
		"leaked_keys": "8", "leaked_bytes": "960", "lost_writes": "0", "window_s": "60", "strategy": "",
	} {
		if ttl[name] != want {
			t.Errorf("ttl-window row: %s = %q, want %q", name, ttl[name], want)
		}
	}
}

// csvRecords reads a results CSV into one map per row, by column name.
func csvRecords(t *testing.T, text string) []map[string]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows[0], report.CSVColumns) {
		t.Fatalf("header %v", rows[0])
	}
	var out []map[string]string
	for _, row := range rows[1:] {
		m := map[string]string{}
		for i, c := range row {
			m[rows[0][i]] = c
		}
		out = append(out, m)
	}
	return out
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

// A design's parameter run at several values is drawn against its outcomes, and its
// figures are in the CSV: cluster-failover's replica lag against the free passes.
func TestDesignChartAndCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, errOut, code := rlsim(t, "run", "cluster-failover", "--charts", "svg", "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files := readTree(t, dir)
	svg := string(files["cluster-failover/failover-lag.svg"])
	for _, want := range []string{"effective limit and free passes against the replica", "free passes", "fixed-window, shared",
		"gcra, shared", "replica lag at the failover (s)", "advertised (100)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("failover-lag.svg lacks %q", want)
		}
	}
	if !strings.Contains(string(files["index.html"]), "cluster-failover/failover-lag.svg") {
		t.Error("index.html does not include the failover chart")
	}
	if _, ok := files["cluster-failover/sync.svg"]; ok {
		t.Error("a scenario with no global-sync fleet draws a sync chart")
	}

	out, errOut, code := rlsim(t, "run", "cluster-failover", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var found bool
	for _, row := range csvRecords(t, out) {
		if row["algorithm"] != "fixed-window" || row["variant"] != "lag-1s" {
			continue
		}
		found = true
		for name, want := range map[string]string{"failovers": "1", "failover_lag_s": "1", "free_passes": "95", "lost_writes": "95",
			"effective_limit": "120", "peer_hops": "0", "eviction_policy": ""} {
			if row[name] != want {
				t.Errorf("fixed-window lag-1s: %s = %q, want %q", name, row[name], want)
			}
		}
	}
	if !found {
		t.Error("no fixed-window lag-1s row")
	}
}
