package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProductSpecsRefusedOnTheCommandLine gives compare, worst-case and replay a product's
// spec with an unknown product, parameter or unit, or a value the product refuses: exit
// 2, nothing on stdout, and one line on stderr naming the part at fault.
func TestProductSpecsRefusedOnTheCommandLine(t *testing.T) {
	log := filepath.Join("testdata", "boundary.log")
	commands := [][]string{
		{"compare", "--scenario", "token-burst"},
		{"worst-case", "--limit", "10", "--window", "1s"},
		{"replay", log},
	}
	for _, c := range []struct{ spec, want string }{
		{"nginks:rate=10r/s", `unknown algorithm "nginks"`},
		{"nginx:rate=10r/s brust=20", `nginx: unknown parameter "brust" (want rate, burst, nodelay, delay)`},
		{"nginx:rate=10r/h", `nginx: rate "10r/h": want a unit, r/s or r/m`},
		{"nginx:rate=10", `nginx: rate "10": want a unit`},
		{"nginx:rate=10r/s burst=0", `nginx: burst "0"`},
		{"nginx:rate=10r/s burst=5 + burst=5", "nginx: set 2 (burst=5): rate is required"},
		{"haproxy:period=10s", "haproxy: the deny rule's comparison is required: gt=N or ge=N"},
		{"haproxy:period=10us gt=2", `haproxy: period "10us": HAProxy counts rates in whole milliseconds`},
		{"haproxy:period=10s gt=2 lt=1", `haproxy: unknown parameter "lt" (want period, gt, ge)`},
		{"gcra,haproxy:period=10x gt=2", `haproxy: period "10x"`},
	} {
		for _, args := range commands {
			out, errOut, code := rlsim(t, append(args, "--algorithms", c.spec, "--out", "")...)
			if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("%s --algorithms %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", args[0], c.spec, code, out, errOut, c.want)
			}
		}
	}
}

// TestProductsWorstCaseCommand: rlsim worst-case finds each model's bound and says so.
// nginx at 10r/s burst=20 gets burst+1 at once and one per 100 ms, and its millisecond
// clock one more: 121 in 10 s. HAProxy's periods start at a key's first request: one
// request, then 20 just before the end of each of the next two periods, 40 in one 10 s
// window, at least the 39 three bursts at 0 s, 9.99 s and 19.98 s get through; ge 20 gets
// 19 a period.
func TestProductsWorstCaseCommand(t *testing.T) {
	d, _ := worstCase(t, "--algorithms", "nginx:rate=10r/s burst=20 nodelay,haproxy:period=10s gt=20,haproxy:period=10s ge=20",
		"--limit", "20", "--window", "10s", "--spans", "1", "--budget", "50")
	want := map[string]int64{"nginx:rate=10r/s burst=20 nodelay": 121, "haproxy:period=10s gt=20": 40, "haproxy:period=10s ge=20": 38}
	if len(d.Results) != len(want) {
		t.Fatalf("%d results", len(d.Results))
	}
	for _, r := range d.Results {
		if r.WorstWindowAdmitted != want[r.Algorithm] || r.AnalyticBound != float64(want[r.Algorithm]) {
			t.Errorf("%s: found %d, bound %v; want both %d", r.Algorithm, r.WorstWindowAdmitted, r.AnalyticBound, want[r.Algorithm])
		}
	}
	// The three bursts of the issue, as a scenario: 39 in one window, within the bound.
	path := filepath.Join(t.TempDir(), "three-bursts.yaml")
	if err := os.WriteFile(path, []byte(`name: three-bursts
seed: 1
duration: 30s
policy: {limit: 20, window: 10s}
algorithms: ['haproxy:period=10s gt=20']
key: user
traffic:
  - script:
      - {at: 0s, count: 1, key: u}
      - {at: 9.99s, count: 20, key: u}
      - {at: 19.98s, count: 20, key: u}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runJSON(t, "run", path, "--out", "").Results[0]
	if r.PeakWindowAdmitted != 39 || r.Admitted != 40 {
		t.Errorf("three bursts: %d admitted, %d in one window; want 40 and 39", r.Admitted, r.PeakWindowAdmitted)
	}
}
