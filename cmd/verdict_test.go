package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// The default run, as a new user types it: every line fits a 100-column terminal, the
// verdict comes first and names every scenario, and every scenario's results.csv has the
// one schema and a row for everything its results.json holds.
func TestDefaultCompareFitsAHundredColumnsVerdictFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errOut, code := rlsim(t, "compare", "--out", dir, "--charts", "none")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, line := range lines {
		if w := report.DisplayWidth(line); w > report.DefaultWidth {
			t.Errorf("line %d is %d columns wide: %s", i+1, w, line)
		}
	}
	if !strings.HasPrefix(lines[0], "Verdict:") {
		t.Fatalf("the output opens with %q, not the verdict", lines[0])
	}
	// The first screen: the matrix names every scenario, and the first table comes after.
	firstTable := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "┌") })
	matrix := strings.Join(lines[:firstTable], "\n")
	var builtins []string
	for _, name := range scenario.Builtins() {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Heavy {
			// The default suite stays quick: a heavy scenario runs only by name.
			if strings.Contains(out, name) {
				t.Errorf("the default suite ran the heavy %s", name)
			}
			continue
		}
		builtins = append(builtins, name)
		if !strings.Contains(matrix, "\n"+name+" ") && !strings.Contains(matrix, " "+name+",") && !strings.Contains(matrix, " "+name+".") {
			t.Errorf("the verdict does not name %s", name)
		}
		if !strings.Contains(matrix, "\n"+name+": ") {
			t.Errorf("the verdict has no finding for %s", name)
		}
	}
	if len(builtins) < 20 {
		t.Fatalf("only %d built-in scenarios", len(builtins))
	}
	for _, name := range builtins {
		data, err := os.ReadFile(filepath.Join(dir, name, "results.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows := csvRecords(t, string(data)) // checks the header is report.CSVColumns
		var rep report.Report
		js, err := os.ReadFile(filepath.Join(dir, name, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, &rep); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, x := range rep.Results {
			want = append(want, report.CSVResult+" "+x.Algorithm)
			for _, l := range x.RefusalsByLayer {
				want = append(want, report.CSVLayer+" "+l.Layer)
			}
			for _, a := range x.Attackers {
				want = append(want, report.CSVCampaign+" "+a.Actor)
			}
		}
		for _, x := range rep.Retries {
			want = append(want, report.CSVRetry+" "+x.Strategy)
			for i := range x.WaveHeights {
				want = append(want, fmt.Sprintf("%s %d", report.CSVWave, i+1))
			}
		}
		var got []string
		for _, row := range rows {
			if row["scenario"] != name {
				t.Errorf("%s/results.csv: a row of %q", name, row["scenario"])
			}
			what := map[string]string{report.CSVResult: "algorithm", report.CSVLayer: "layer", report.CSVCampaign: "actor",
				report.CSVRetry: "strategy", report.CSVWave: "wave"}[row["kind"]]
			got = append(got, row["kind"]+" "+row[what])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s/results.csv rows %v, want %v", name, got, want)
		}
	}
}

// `--format csv` over scenarios of every kind — plain, identity, fleet, retrying
// clients — prints one header and the rows of each scenario, the same rows its
// results.csv holds.
func TestCompareCSVOneHeaderEveryScenario(t *testing.T) {
	names := []string{"boundary-burst", "login-attack", "cluster-outage", "testdata/small-storm.yaml"}
	var args []string
	for _, n := range names {
		args = append(args, "--scenario", n)
	}
	dir := t.TempDir()
	out, errOut, code := rlsim(t, append([]string{"compare", "--format", "csv", "--out", dir}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "kind,scenario,"); n != 1 {
		t.Fatalf("%d header lines", n)
	}
	var folders []string
	for _, row := range csvRecords(t, out) {
		if !slices.Contains(folders, row["scenario"]) {
			folders = append(folders, row["scenario"])
		}
	}
	if want := []string{"boundary-burst", "login-attack", "cluster-outage", "small-storm"}; !slices.Equal(folders, want) {
		t.Fatalf("scenarios %v, want %v", folders, want)
	}
	var files string
	for _, f := range folders {
		data, err := os.ReadFile(filepath.Join(dir, f, "results.csv"))
		if err != nil {
			t.Fatal(err)
		}
		header, rows, _ := strings.Cut(string(data), "\n")
		if header+"\n" != strings.Join(report.CSVColumns, ",")+"\n" {
			t.Fatalf("%s: header %s", f, header)
		}
		files += rows
	}
	if _, rows, _ := strings.Cut(out, "\n"); rows != files {
		t.Error("--format csv differs from the scenarios' results.csv files put together")
	}
}

func TestColumnsAndWide(t *testing.T) {
	args := []string{"compare", "--scenario", "boundary-burst", "--format", "markdown"}
	def, _, code := rlsim(t, args...)
	if code != 0 || !strings.Contains(def, "| algorithm | admitted | over-admission |") || strings.Contains(def, "| requests |") {
		t.Fatalf("default columns (exit %d):\n%s", code, def)
	}
	picked, _, code := rlsim(t, append(args, "--columns", "state_bytes_per_key,over_admission")...)
	if code != 0 || !strings.Contains(picked, "| algorithm | bytes per key | over-admission |\n") ||
		!strings.Contains(picked, "| sliding-log | 2096 | 1.00 |\n") {
		t.Fatalf("--columns (exit %d):\n%s", code, picked)
	}
	wide, _, code := rlsim(t, append(args, "--wide")...)
	want := "| algorithm | requests | admitted | refused | peak in window | over-admission | worst possible | false allows | false rejects | legit refused | backend peak | bytes per key | delay ms |"
	if code != 0 || !strings.Contains(wide, want) {
		t.Fatalf("--wide (exit %d):\n%s", code, wide)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--columns", "colour"}, `--columns: unknown column "colour" (want algorithm, requests,`},
		{[]string{"--columns", "over_admission", "--wide"}, "--columns and --wide: choose one"},
		{[]string{"--format", "csv", "--wide"}, "--wide: --format csv carries every column"},
		{[]string{"--format", "json", "--columns", "over_admission"}, "--columns: --format json carries every column"},
	} {
		out, errOut, code := rlsim(t, append([]string{"compare", "--scenario", "boundary-burst"}, bad.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, bad.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", bad.args, code, out, errOut, bad.want)
		}
	}
}

// rlsim scenarios list wraps its descriptions to 100 columns, left-aligned.
func TestScenariosListFitsAHundredColumns(t *testing.T) {
	out, _, code := rlsim(t, "scenarios", "list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := report.DisplayWidth(line); w > report.DefaultWidth {
			t.Errorf("%d columns: %s", w, line)
		}
	}
	if !strings.Contains(out, "│ boundary-burst      │ 100/min; 100 requests at 10:00:59.900") {
		t.Errorf("descriptions are not left-aligned beside their names:\n%s", out)
	}
}
