package cmd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var sweepArgs = []string{"sweep", "--scenario", "steady-poisson", "--algorithms", "token-bucket,fixed-window",
	"--param", "policy.burst=5,60", "--param", "duration=5s,10s,15s"}

// The acceptance test of sharding: three shards, merged, print exactly what one run prints.
func TestMergeOfThreeShardsEqualsUnshardedByteForByte(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, k := range []string{"2/3", "3/3", "1/3"} {
		out, errOut, code := rlsim(t, append(sweepArgs, "--shard", k)...)
		if code != 0 {
			t.Fatalf("shard %s: exit %d: %s", k, code, errOut)
		}
		if !strings.Contains(out, `"shard": {`) {
			t.Fatalf("shard %s printed no partial results file:\n%s", k, out)
		}
		f := filepath.Join(dir, strings.ReplaceAll(k, "/", "-of-")+".json")
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for _, format := range []string{"json", "table", "csv"} {
		want, errOut, code := rlsim(t, append(sweepArgs, "--format", format, "--workers", "1")...)
		if code != 0 {
			t.Fatalf("sweep: exit %d: %s", code, errOut)
		}
		got, errOut, code := rlsim(t, append([]string{"merge", "--format", format}, files...)...)
		if code != 0 {
			t.Fatalf("merge: exit %d: %s", code, errOut)
		}
		if got != want {
			t.Errorf("%s: merge of 3 shards differs from one run:\n%s\nwant\n%s", format, got, want)
		}
	}
	_, errOut, code := rlsim(t, "merge", files[0], files[1])
	if code != 1 || !strings.Contains(errOut, "shard 1/3 is missing") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("merge of 2 of 3 shards: exit %d, %q", code, errOut)
	}
}

func TestSweepWritesTheChart(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := rlsim(t, append(sweepArgs, "--out", dir, "--charts", "png,svg", "--chart-metric", "false_reject_rate", "--chart-param", "policy.burst")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, ext := range []string{"png", "svg"} {
		p := filepath.Join(dir, "sweep-steady-poisson-false_reject_rate-vs-policy-burst."+ext)
		if st, err := os.Stat(p); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestSweepBadCommandLines(t *testing.T) {
	var many []string
	for i := range 200 {
		many = append(many, strconv.Itoa(i+1))
	}
	manyValues := strings.Join(many, ",")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "--param", "seed=1"}, "--scenario: required"},
		{[]string{"sweep", "--scenario", "steady-poisson"}, "--param: give at least one"},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "policy.colour=1"}, `unknown parameter "policy.colour" (want one of policy.limit, policy.window, policy.burst, seed, duration, cluster.sync, cluster.sync_to, cluster.nodes, cluster.failover_lag, cluster.maxmemory, cluster.eviction_policy)`},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=1", "--param", "seed=2"}, "--param: seed given twice"},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=1", "--shard", "0/2"}, "--shard: want K/N"},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=1", "--shard", "1/2", "--format", "csv"}, "--shard: a shard prints its partial results as JSON"},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=1", "--chart-metric", "colour"}, `--chart-metric: unknown metric "colour"`},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=1", "--chart-metric", "over_admission", "--chart-param", "policy.burst"}, `--chart-param: "policy.burst" is not a swept parameter`},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=1", "--workers", "-1"}, "--workers: must not be negative"},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=1", "--chart-metric", "admitted", "--charts", "png,gif"}, `--charts: unknown chart format "gif"`},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=1", "--decisions", "d.csv"}, `unknown flag --decisions for "rlsim sweep"`},
		{[]string{"sweep", "--scenario", "steady-poisson", "--param", "seed=" + manyValues, "--param", "policy.limit=" + manyValues, "--param", "policy.burst=" + manyValues}, "--param: the grid has more than 1048576 points"},
	}
	for _, tt := range tests {
		out, errOut, code := rlsim(t, tt.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
	_, errOut, code := rlsim(t, "merge", "no-such-file.json")
	if code != 1 || !strings.HasPrefix(errOut, "rlsim: merge: ") {
		t.Errorf("merge of a missing file: exit %d, %q", code, errOut)
	}
}
