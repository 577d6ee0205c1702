package cmd

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/report"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Tests that only run rlsim in-process and touch nothing the process shares (the working
// folder, the environment, signals, child processes counted in /proc, servers, wall-clock
// budgets, progressDelay) call t.Parallel: Go runs them together after every sequential
// test has finished, so the tests that time a real server or a signal still run alone in
// this package, and the CPU-bound ones use every core.

// rlsim runs the command line in-process and returns stdout, stderr and the exit status.
// On a command that writes result files, they go to a temporary folder unless the
// arguments name one with --out, and charts are drawn only when --charts asks (drawing is
// slow under -race).
func rlsim(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	has := func(flag string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
	}
	if c, _, err := NewRoot(IO{}).Find(args); err == nil && c.Flags().Lookup("out") != nil {
		if !has("--out") {
			args = append(slices.Clone(args), "--out", t.TempDir())
		}
		if !has("--charts") {
			args = append(slices.Clone(args), "--charts", "none")
		}
	}
	var out, errb bytes.Buffer
	code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test ./cmd -update rewrites it):\n%s", path, got)
	}
}

func TestCompareGolden(t *testing.T) {
	for _, format := range []string{"table", "json", "csv", "markdown"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst", "--scenario", "sliding-estimate", "--format", format)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden(t, "compare-boundary."+format, out)
		})
	}
}

type jsonReport struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Policy   struct {
		Limit  int64  `json:"limit"`
		Window string `json:"window"`
		Burst  int64  `json:"burst"`
	} `json:"policy"`
	Results []struct {
		Algorithm          string   `json:"algorithm"`
		Requests           int64    `json:"requests"`
		Admitted           int64    `json:"admitted"`
		Rejected           int64    `json:"rejected"`
		PeakWindowAdmitted int64    `json:"peak_window_admitted"`
		OverAdmission      float64  `json:"over_admission"`
		FalseAllow         int64    `json:"false_allow"`
		FalseReject        int64    `json:"false_reject"`
		FalseAllowRate     float64  `json:"false_allow_rate"`
		FalseRejectRate    float64  `json:"false_reject_rate"`
		LegitRejectRate    *float64 `json:"legit_reject_rate"`
		AttackerAdmitRate  *float64 `json:"attacker_admit_rate"`
		StateBytesPerKey   float64  `json:"state_bytes_per_key"`
	} `json:"results"`
	// Log is a replay's account of its log.
	Log *report.ReplayLog `json:"log"`
}

func compareJSON(t *testing.T, args ...string) jsonReport {
	t.Helper()
	out, errOut, code := rlsim(t, append([]string{"compare", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	return r
}

func TestBoundaryBurstAcceptance(t *testing.T) {
	r := compareJSON(t, "--scenario", "boundary-burst")
	if r.Policy.Limit != 100 || r.Policy.Window != "1m0s" || r.Policy.Burst != 100 {
		t.Fatalf("policy = %+v", r.Policy)
	}
	seen := map[string]bool{}
	for _, x := range r.Results {
		seen[x.Algorithm] = true
		switch x.Algorithm {
		case "fixed-window":
			if x.Admitted != 200 || x.PeakWindowAdmitted != 200 || x.OverAdmission != 2.0 {
				t.Errorf("fixed-window: admitted %d peak %d over %.2f, want 200 200 2.00", x.Admitted, x.PeakWindowAdmitted, x.OverAdmission)
			}
		case "sliding-log":
			if x.Admitted != 100 || x.OverAdmission != 1.0 || x.FalseAllow != 0 || x.FalseReject != 0 {
				t.Errorf("sliding-log: %+v", x)
			}
		default:
			if x.OverAdmission > 1.01 {
				t.Errorf("%s: over_admission %.3f > 1.01", x.Algorithm, x.OverAdmission)
			}
		}
	}
	if len(seen) != 6 {
		t.Errorf("algorithms = %v, want all six", seen)
	}
}

func TestBoundary6000(t *testing.T) {
	r := compareJSON(t, "--scenario", "boundary-6000", "--algorithms", "fixed-window")
	if len(r.Results) != 1 || r.Results[0].Admitted != 12000 {
		t.Fatalf("results = %+v", r.Results)
	}
}

func TestSlidingEstimateAdmitsExactlyFiveAtQuarterPast(t *testing.T) {
	dir := t.TempDir()
	decisions := filepath.Join(dir, "decisions.csv")
	r := compareJSON(t, "--scenario", "sliding-estimate", "--algorithms", "sliding-window", "--decisions", decisions)
	if r.Results[0].Admitted != 125 {
		t.Fatalf("admitted %d, want 100+20+5", r.Results[0].Admitted)
	}
	f, err := os.Open(decisions)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "t_ns,key,cost,algorithm,allowed,reference_allowed,scenario" {
		t.Fatalf("header = %v", rows[0])
	}
	const at = "75000000000" // 10:01:15 is 75 s after the epoch 10:00:00
	admitted, sent := 0, 0
	for _, row := range rows[1:] {
		if row[0] == at {
			sent++
			if row[4] == "true" {
				admitted++
			}
		}
	}
	if sent != 10 || admitted != 5 {
		t.Fatalf("at 25%% of the window: %d of %d admitted, want 5 of 10", admitted, sent)
	}
}

func TestSteadyPoissonReferenceIsExact(t *testing.T) {
	r := compareJSON(t, "--scenario", "steady-poisson")
	for _, x := range r.Results {
		if x.Algorithm == "sliding-log" && (x.FalseAllow != 0 || x.FalseReject != 0) {
			t.Errorf("sliding-log is the reference, yet false_allow %d false_reject %d", x.FalseAllow, x.FalseReject)
		}
		if x.Requests < 200000 {
			t.Errorf("%s: only %d requests", x.Algorithm, x.Requests)
		}
	}
}

func TestSameSeedSameBytes(t *testing.T) {
	t.Parallel()
	a, _, _ := rlsim(t, "compare", "--scenario", "steady-poisson", "--format", "json", "--seed", "7")
	b, _, _ := rlsim(t, "compare", "--scenario", "steady-poisson", "--format", "json", "--seed", "7")
	c, _, _ := rlsim(t, "compare", "--scenario", "steady-poisson", "--format", "json", "--seed", "8")
	if a != b {
		t.Fatal("same seed gave different JSON")
	}
	if a == c {
		t.Fatal("different seeds gave identical JSON: the seed is not reaching the traffic")
	}
}

func TestBadInputExitsNonZeroWithOneLineAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	decisions := filepath.Join(dir, "decisions.csv")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"compare", "--scenario", "../scenario/testdata/bad/unknown-field.yaml"}, 1, "unknown-field.yaml:6:36: traffic[0].script[0].colour: unknown field"},
		{[]string{"compare", "--scenario", "../scenario/testdata/bad/negative-limit.yaml"}, 1, "negative-limit.yaml:4:10: policy.limit:"},
		{[]string{"compare", "--scenario", "../scenario/testdata/bad/zero-window.yaml"}, 1, "zero-window.yaml:3:30: policy.window:"},
		{[]string{"compare", "--scenario", "../scenario/testdata/bad/negative-count.yaml"}, 1, "negative-count.yaml:7:33: traffic[0].script[1].count:"},
		{[]string{"compare", "--scenario", "../scenario/testdata/bad/syntax.yaml"}, 1, "syntax.yaml:"},
		{[]string{"compare", "--scenario", "testdata/missing.yaml"}, 1, "testdata/missing.yaml: no such file or directory"},
		{[]string{"compare", "--scenario", "nosuch"}, 2, `scenario "nosuch": no built-in scenario of that name`},
		{[]string{"run", "nosuch"}, 2, `scenario "nosuch": no built-in scenario of that name`},
		{[]string{"run", "../scenario/testdata/bad/negative-count.yaml"}, 1, "count: must be between"},
		{[]string{"compare", "--algorithms", "fixed-window,nope"}, 2, `for "--algorithms" flag: unknown algorithm "nope"`},
		{[]string{"compare", "--algorithms", "gcra:burst=2"}, 2, `for "--algorithms" flag: gcra takes no parameters`},
		{[]string{"compare", "--format", "xml"}, 2, `invalid argument "xml" for "--format" flag: unknown format "xml"`},
		{[]string{"compare", "--limit", "-3"}, 2, `invalid argument "-3" for "--limit" flag: must be at least 1, got -3`},
		{[]string{"compare", "--limit", "0"}, 2, `invalid argument "0" for "--limit" flag: must be at least 1, got 0`},
		{[]string{"compare", "--window", "0s"}, 2, `invalid argument "0s" for "--window" flag: must be positive, got 0s`},
		{[]string{"compare", "--burst", "0"}, 2, `invalid argument "0" for "--burst" flag: must be at least 1, got 0`},
		{[]string{"compare", "--limit", "6000000000000000000"}, 2, `invalid argument "6000000000000000000" for "--limit" flag: want a whole number from 1 to 4503599627370496 (2^52)`},
		{[]string{"replay", "testdata/missing.log", "--burst", "4503599627370497"}, 2, `invalid argument "4503599627370497" for "--burst" flag: want a whole number from 1 to 4503599627370496 (2^52)`},
		{[]string{"run", "../scenario/testdata/bad/overflow.yaml"}, 1, "overflow.yaml:3:17: policy.limit: must be at most 4503599627370496 (2^52), got 6000000000000000000"},
		{[]string{"compare", "--window", "500000h"}, 2, `invalid argument "500000h" for "--window" flag: 500000h0m0s is longer than the longest window the virtual clock handles, 100000h0m0s`},
		{[]string{"compare", "--window", "soon"}, 2, `invalid argument "soon" for "--window"`},
		{[]string{"compare", "--key", "shoe-size"}, 2, `--key: unknown key "shoe-size"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := append(tt.args, "--decisions", decisions)
			out, errOut, code := rlsim(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", errOut, tt.want)
			}
			if _, err := os.Stat(decisions); !os.IsNotExist(err) {
				t.Errorf("decisions file left behind: %v", err)
			}
			left, _ := os.ReadDir(dir)
			if len(left) != 0 {
				t.Errorf("files left in the output folder: %v", left)
			}
		})
	}
}

func TestScenariosListAndShow(t *testing.T) {
	out, _, code := rlsim(t, "scenarios", "list")
	if code != 0 || !strings.Contains(out, "boundary-burst") || !strings.Contains(out, "steady-poisson") {
		t.Fatalf("list (exit %d):\n%s", code, out)
	}
	out, _, code = rlsim(t, "scenarios", "show", "boundary-burst")
	if code != 0 || !strings.Contains(out, `"10:00:59.900"`) {
		t.Fatalf("show (exit %d):\n%s", code, out)
	}
	_, errOut, code := rlsim(t, "scenarios", "show", "nope")
	if code != 2 || !strings.Contains(errOut, `"nope"`) {
		t.Fatalf("show nope: exit %d %q", code, errOut)
	}
}
