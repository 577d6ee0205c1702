package run

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/external"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

func repoFile(t *testing.T, parts ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(append([]string{".."}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decisionsByAlgorithm runs sc with o and returns each algorithm's decisions file rows,
// in order, without the algorithm's column, and the report.
func decisionsByAlgorithm(t *testing.T, sc *scenario.Scenario, o Options) (map[string][][]string, *report.Report) {
	t.Helper()
	var buf bytes.Buffer
	dw := NewDecisionWriter(csv.NewWriter(&buf))
	o.Decisions = dw
	rep, err := Run(sc, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := dw.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]string{}
	for _, r := range rows[min(len(rows), 1):] {
		alg := r[3]
		out[alg] = append(out[alg], slices.Delete(slices.Clone(r), 3, 4))
	}
	return out, rep
}

// sameDecisions fails unless a and b decided every request alike, and says where not.
func sameDecisions(t *testing.T, what string, a, b [][]string) {
	t.Helper()
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%s: %d and %d decisions", what, len(a), len(b))
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("%s: request %d differs:\n  %v\n  %v", what, i+1, a[i], b[i])
		}
	}
}

// result is the result of rep named alg.
func result(t *testing.T, rep *report.Report, alg string) report.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Algorithm == alg {
			return r
		}
	}
	t.Fatalf("%s: no result for %s", rep.Scenario, alg)
	return report.Result{}
}

// miniredisRequests bounds the requests a scenario runs through a script on miniredis
// (a few thousand calls a second): a bigger scenario is cut short, so its decisions are
// the first of the whole run's. On a real server (RLSIM_REDIS_URL) all of them run.
const miniredisRequests = 3000

// TestFixedWindowScriptEqualsBuiltinOnPlainScenarios: examples/lua/fixed_window.lua,
// written to the calling convention, decides every request of every plain built-in
// scenario as the built-in fixed-window does, and so gets the same figures.
func TestFixedWindowScriptEqualsBuiltinOnPlainScenarios(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	lua, err := external.NewLua(repoFile(t, "examples", "lua", "fixed_window.lua"), url)
	if err != nil {
		t.Fatal(err)
	}
	plain := 0
	for _, name := range scenario.Builtins() {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		// Leave out million-keys (heavy: ten million calls) and the closed-loop client
		// scenarios, whose clients the built-ins alone serve.
		if !plainKeys(sc) || sc.Heavy || sc.Clients != nil {
			continue
		}
		plain++
		t.Run(name, func(t *testing.T) {
			if url == "" {
				all, _ := decisionsByAlgorithm(t, sc, Options{Algorithms: []string{"fixed-window"}})
				if n := len(all["fixed-window"]); n > miniredisRequests {
					at, err := strconv.ParseInt(all["fixed-window"][miniredisRequests-1][0], 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					sc.Duration = scenario.Duration(at + 1)
					t.Logf("%d requests: cut to the first %s on miniredis", n, time.Duration(sc.Duration))
				}
			}
			got, rep := decisionsByAlgorithm(t, sc, Options{Algorithms: []string{"fixed-window"}, Own: []Maker{lua}})
			sameDecisions(t, name, got["fixed-window"], got["fixed_window"])
			a, b := result(t, rep, "fixed-window"), result(t, rep, "fixed_window")
			a.Algorithm, a.StateBytesPerKey, b.Algorithm, b.StateBytesPerKey = "", 0, "", 0
			if a.StateBytesUnknown || !b.StateBytesUnknown {
				t.Fatalf("bytes per key: the built-in's must be counted, the script's not (%v, %v)", a.StateBytesUnknown, b.StateBytesUnknown)
			}
			b.StateBytesUnknown = false
			a.Timeline, b.Timeline = nil, nil
			if mustJSON(t, a) != mustJSON(t, b) {
				t.Fatalf("same decisions, different figures:\n%+v\n%+v", a, b)
			}
		})
	}
	if plain < 8 {
		t.Fatalf("only %d plain built-in scenarios", plain)
	}
}

// TestTokenBucketProgramEqualsBuiltinOnSteadyPoisson: examples/exec/token_bucket.py,
// run as --limiter-exec does, decides every request of steady-poisson as the built-in
// token bucket does.
func TestTokenBucketProgramEqualsBuiltinOnSteadyPoisson(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	prog, err := external.NewExec("python3 "+repoFile(t, "examples", "exec", "token_bucket.py"), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	sc, err := scenario.Load("steady-poisson")
	if err != nil {
		t.Fatal(err)
	}
	got, rep := decisionsByAlgorithm(t, sc, Options{Algorithms: []string{"token-bucket"}, Own: []Maker{prog}})
	sameDecisions(t, "steady-poisson", got["token-bucket"], got["token_bucket"])
	if n := result(t, rep, "token_bucket").Requests; n < 100000 {
		t.Fatalf("%d requests: steady-poisson shrank", n)
	}
	if s := prog.Stats(); s.Decisions != int64(len(got["token_bucket"])) {
		t.Errorf("the program's stats count %d decisions, the run %d", s.Decisions, len(got["token_bucket"]))
	}
}

// TestNotesTwoCounterScript: the notes' two-counter script run as --lua gets, on the
// scenarios built to show its flaw, the over-admission of the built-in variant that
// mirrors it, above the built-in sliding window's on boundary-burst.
func TestNotesTwoCounterScript(t *testing.T) {
	lua, err := external.NewLua(repoFile(t, "examples", "lua", "notes_two_counter.lua"), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"two-counter-timed", "boundary-burst"} {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		got, rep := decisionsByAlgorithm(t, sc, Options{Algorithms: []string{"notes-sliding-window", "sliding-window"}, Own: []Maker{lua}})
		sameDecisions(t, name, got["notes-sliding-window"], got["notes_two_counter"])
		script, builtin := result(t, rep, "notes_two_counter"), result(t, rep, "sliding-window")
		if script.OverAdmission <= 1 {
			t.Errorf("%s: the two-counter script's over-admission %.2f, want above 1", name, script.OverAdmission)
		}
		if name == "boundary-burst" && script.OverAdmission <= builtin.OverAdmission {
			t.Errorf("%s: the script's over-admission %.2f is not above sliding-window's %.2f", name, script.OverAdmission, builtin.OverAdmission)
		}
	}
}

// TestScriptAsSharedFleetScript: in a cluster scenario a --lua script is the shared
// placement's script: every node's decision is a call of it on the one store, so
// fixed_window.lua decides as the built-in fixed window's shared fleet.
func TestScriptAsSharedFleetScript(t *testing.T) {
	lua, err := external.NewLua(repoFile(t, "examples", "lua", "fixed_window.lua"), "")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load("cluster-shared")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = scenario.Duration(30 * time.Second) // the first half window: ~2000 calls
	got, rep := decisionsByAlgorithm(t, sc, Options{Algorithms: []string{"fixed-window"}, Own: []Maker{lua}})
	if len(got["fixed_window@shared"]) < 1000 {
		t.Fatalf("%d decisions of the script's fleet (algorithms %v)", len(got["fixed_window@shared"]), slices.Collect(maps.Keys(got)))
	}
	sameDecisions(t, "cluster-shared", got["fixed-window@shared"], got["fixed_window@shared"])
	a, b := result(t, rep, "fixed-window"), result(t, rep, "fixed_window")
	a.Algorithm, b.Algorithm, a.Timeline, b.Timeline = "", "", nil, nil
	if a.Distributed == nil || b.Distributed == nil || b.Store != "miniredis" {
		t.Fatalf("fleet figures %+v and %+v: the script's should be on miniredis", a.Distributed, b.Distributed)
	}
	a.Store = b.Store // the built-in's fleet runs on the store's model
	if ja, jb := mustJSON(t, a), mustJSON(t, b); ja != jb || !strings.Contains(jb, `"variant":"shared"`) {
		t.Errorf("the script's fleet result differs from the built-in's:\n%s\n%s", ja, jb)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTokenBucketProgramOnEngines: the program decides as the built-in down the engine
// path too — identities keyed by address (ip-rotation), layered limits with plans
// (tenants), a plain scenario forced down the engine — where it is written ahead of its
// answers through runEngineAhead, or one call at a time in layers.
func TestTokenBucketProgramOnEngines(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	prog, err := external.NewExec("python3 "+repoFile(t, "examples", "exec", "token_bucket.py"), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	for _, c := range []struct {
		name  string
		force bool
	}{{"ip-rotation", false}, {"tenants", false}, {"flood-one-key", true}} {
		sc, err := scenario.Load(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if plainKeys(sc) != c.force {
			t.Fatalf("%s: plain %v; the test means to take the engine path", c.name, plainKeys(sc))
		}
		forceEngine = c.force
		got, rep := decisionsByAlgorithm(t, sc, Options{Algorithms: []string{"token-bucket"}, Own: []Maker{prog}})
		forceEngine = false
		sameDecisions(t, c.name, got["token-bucket"], got["token_bucket"])
		a, b := result(t, rep, "token-bucket"), result(t, rep, "token_bucket")
		a.Algorithm, a.StateBytesPerKey, b.Algorithm, b.StateBytesPerKey = "", 0, "", 0
		if a.StateBytesUnknown || !b.StateBytesUnknown {
			t.Fatalf("bytes per key: the built-in's must be counted, the program's not (%v, %v)", a.StateBytesUnknown, b.StateBytesUnknown)
		}
		b.StateBytesUnknown = false
		a.Timeline, b.Timeline = nil, nil
		if ja, jb := mustJSON(t, a), mustJSON(t, b); ja != jb {
			t.Errorf("%s: same decisions, different figures:\n%s\n%s", c.name, ja, jb)
		}
	}
}
