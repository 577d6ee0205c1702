package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/report"
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

// runnableExamples are the arguments of the documented examples of the command name
// that print to the terminal (none redirected, piped or fed a file) and need no server
// (--redis) or shard files.
func runnableExamples(t *testing.T, name string) [][]string {
	t.Helper()
	c, _, err := NewRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}).Find([]string{name})
	if err != nil || c.Name() != name {
		t.Fatalf("no command %s: %v", name, err)
	}
	exs, err := examples(c)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, ex := range exs {
		if ex.redirect != "" || ex.stdin != "" || strings.ContainsAny(ex.line, ">|") ||
			slices.ContainsFunc(ex.args, func(a string) bool { return a == "--redis" || a == "--shard" }) {
			continue
		}
		out = append(out, ex.args)
	}
	if len(out) < 2 {
		t.Fatalf("rlsim %s documents %d runnable examples, want at least 2", name, len(out))
	}
	return out
}

// fitsAndReads fails t for each of outputProblems(out).
func fitsAndReads(t *testing.T, what, out string) {
	t.Helper()
	for _, p := range outputProblems(out) {
		t.Errorf("%s, %s", what, p)
	}
}

// outputProblems are the lines of out over 100 display columns and the table headers that
// print a machine name (with an underscore, as JSON and CSV spell them).
func outputProblems(out string) []string {
	var problems []string
	inHeader := false
	for i, line := range strings.Split(out, "\n") {
		if w := report.DisplayWidth(line); w > 100 {
			problems = append(problems, fmt.Sprintf("line %d: %d columns: %s", i+1, w, line))
		}
		switch {
		case strings.HasPrefix(line, "┌"):
			inHeader = true
		case strings.HasPrefix(line, "├"):
			inHeader = false
		case inHeader && strings.Contains(line, "_"):
			problems = append(problems, fmt.Sprintf("line %d: a machine name in the header: %s", i+1, line))
		}
	}
	return problems
}

func TestOutputProblemsFindsWideLinesAndMachineHeaders(t *testing.T) {
	var b strings.Builder
	render.WriteText(&b, report.Table{Header: []string{"algorithm", "state_bytes_per_key"}, Rows: [][]string{{"gcra", "16"}}})
	if p := outputProblems(b.String()); len(p) != 1 || !strings.Contains(p[0], "machine name") {
		t.Errorf("machine header: %q", p)
	}
	if p := outputProblems(strings.Repeat("x", 101) + "\n" + strings.Repeat("é", 100)); len(p) != 1 || !strings.Contains(p[0], "101 columns") {
		t.Errorf("101 columns: %q", p)
	}
}

// The default output of sweep's, memory's and backoff's documented examples keeps to 100
// columns, under headers a person reads.
func TestSweepMemoryBackoffExamplesFitOneHundredColumns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs every example")
	}
	for _, name := range []string{"sweep", "memory", "backoff"} {
		for _, args := range runnableExamples(t, name) {
			if name != "memory" {
				args = append(args, "--charts", "none") // the charts are not what is measured
			}
			if name == "backoff" && !slices.Contains(args, "--runs") {
				args = append(args, "--runs", "2")
			}
			out, errOut, code := rlsim(t, append(args, "--out", "")...)
			if code != 0 {
				t.Errorf("rlsim %s: exit %d: %s", strings.Join(args, " "), code, errOut)
				continue
			}
			fitsAndReads(t, "rlsim "+strings.Join(args, " "), out)
		}
	}
	// backoff's rate-limited model, whose title was the widest line.
	out, errOut, code := rlsim(t, "backoff", "--model", "rate-limited", "--runs", "2", "--charts", "none")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fitsAndReads(t, "rlsim backoff --model rate-limited", out)
}

// A sweep whose table outruns a screen ends with the answer again: per algorithm, at how
// many points it kept the promise and its worst; a short one does not repeat itself.
func TestLongSweepEndsWithARecap(t *testing.T) {
	t.Parallel()
	out, errOut, code := rlsim(t, "sweep", "--scenario", "steady-poisson", "--param", "policy.burst=5,20,60,100", "--charts", "none", "--out", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	tail := out[strings.LastIndex(out, "Recap: "):]
	for _, want := range []string{"  fixed-window    kept it at 0 of 4 points, worst 1.42× (policy.burst=5)\n", "  sliding-log     kept it at 4 of 4 points\n"} {
		if !strings.Contains(tail, want) {
			t.Errorf("recap lacks %q:\n%s", want, tail)
		}
	}
	if n := strings.Count(tail, "\n"); n > 15 {
		t.Errorf("recap of %d lines", n)
	}
	short, _, _ := rlsim(t, "sweep", "--scenario", "boundary-burst", "--algorithms", "gcra", "--param", "policy.burst=10,20", "--charts", "none", "--out", "")
	if strings.Contains(short, "Recap") {
		t.Errorf("a sweep of two rows repeats itself:\n%s", short)
	}
}
