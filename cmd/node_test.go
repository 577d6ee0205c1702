package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nodeCommand is the --limiter-exec command running examples/node/name, a real npm library
// on rlsim's clock, or a skip when Node.js or the libraries are missing (they are looked
// for in RLSIM_NODE_MODULES, else examples/node/node_modules; with RLSIM_NODE_MODULES set,
// as CI sets it, a missing one fails the test).
func nodeCommand(t *testing.T, name string) string {
	t.Helper()
	dir := repoPath(t, "examples", "node")
	modules, required := os.LookupEnv("RLSIM_NODE_MODULES")
	if !required {
		modules = filepath.Join(dir, "node_modules")
	}
	_, nodeErr := exec.LookPath("node")
	_, libErr := os.Stat(filepath.Join(modules, "express-rate-limit", "package.json"))
	_, lib2Err := os.Stat(filepath.Join(modules, "rate-limiter-flexible", "package.json"))
	switch {
	case nodeErr == nil && libErr == nil && lib2Err == nil:
	case required:
		t.Fatalf("RLSIM_NODE_MODULES=%s is set, but node or a library is missing", modules)
	default:
		t.Skip("node or the npm libraries are missing (npm ci --prefix examples/node)")
	}
	return "NODE_PATH='" + modules + "' node " + filepath.Join(dir, name)
}

// TestNodeLibrariesInCompare: the README's example — express-rate-limit and
// rate-limiter-flexible run by --limiter-exec on rlsim's clock, their windows and limits
// taken from the run's policy — admits and refuses on built-in scenarios exactly what
// rlsim's models of them do, configured in the libraries' own words.
func TestNodeLibrariesInCompare(t *testing.T) {
	express, flexible := nodeCommand(t, "express_rate_limit.js"), nodeCommand(t, "rate_limiter_flexible.js")
	for _, scenario := range []string{"flood-one-key", "boundary-burst", "two-counter-timed", "cost-weighted"} {
		out, errOut, code := runCLI(t, "compare", "--scenario", scenario,
			"--algorithms", "express-rate-limit:windowMs=60000 limit=100,rate-limiter-flexible:points=100 duration=60",
			"--limiter-exec", express, "--limiter-exec", flexible,
			"--limit", "100", "--window", "1m", "--worst-budget", "0", "--format", "json", "--out", "")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", scenario, code, errOut)
		}
		var rep struct {
			Results []struct {
				Algorithm          string `json:"algorithm"`
				Requests           int64  `json:"requests"`
				Admitted           int64  `json:"admitted"`
				PeakWindowAdmitted int64  `json:"peak_window_admitted"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		byName := map[string]int{}
		for i, r := range rep.Results {
			byName[r.Algorithm] = i
		}
		for program, model := range map[string]string{
			"express_rate_limit":    "express-rate-limit:windowMs=60000 limit=100",
			"rate_limiter_flexible": "rate-limiter-flexible:points=100 duration=60",
		} {
			pi, ok1 := byName[program]
			mi, ok2 := byName[model]
			if !ok1 || !ok2 {
				t.Fatalf("%s: no rows for %s and %s in %s", scenario, program, model, out)
			}
			p, m := rep.Results[pi], rep.Results[mi]
			if p.Admitted != m.Admitted || p.PeakWindowAdmitted != m.PeakWindowAdmitted || p.Requests != m.Requests {
				t.Errorf("%s: the library %+v, its model %+v", scenario, p, m)
			}
			if m.Admitted == 0 || m.Admitted == m.Requests && scenario == "flood-one-key" {
				t.Errorf("%s: %s admitted %d of %d", scenario, model, m.Admitted, m.Requests)
			}
			t.Logf("%s: %s and %s admitted %d of %d, peak %d", scenario, program, model, m.Admitted, m.Requests, m.PeakWindowAdmitted)
		}
	}
}
