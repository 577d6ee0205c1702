package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/scenario"
)

// toyFormat is a configuration format of these tests only: a file of lines "KEY SPEC",
// each one limit at a location of its own. Its specs name built-in algorithms and
// toyProduct, so that --import runs end to end whichever product models this build has.
const toyFormat = "toy-test"

// toyProduct is a product's model of these tests only, with parameters as a product's
// are: "toy-product:rate=Nr/s burst=N nodelay" runs GCRA at the rate with burst N+1.
const toyProduct = "toy-product"

type toyModel struct {
	spec        string
	rate, burst int64
}

// toyLimiter is GCRA under the toy's spec, the name every output gives its row.
type toyLimiter struct {
	algorithms.Limiter
	spec string
}

func (l toyLimiter) Name() string { return l.spec }

func (m toyModel) New(algorithms.Policy) (algorithms.Limiter, error) {
	lim, err := algorithms.New("gcra", algorithms.Policy{Limit: m.rate, Window: time.Second, Burst: m.burst + 1})
	return toyLimiter{Limiter: lim, spec: m.spec}, err
}

func (toyModel) Bound(algorithms.Policy, time.Duration) (algorithms.Bound, bool) {
	return algorithms.Bound{}, false
}

func init() {
	algorithms.Register(algorithms.Kind{
		Name: toyProduct, Rank: 9990, Summary: "tests only",
		Params: []algorithms.Param{{Name: "rate", Doc: "r/s"}, {Name: "burst", Doc: "requests"}, {Name: "nodelay", Flag: true, Doc: "a flag"}},
		Configure: func(args algorithms.Args) (algorithms.Model, error) {
			rate, err := strconv.ParseInt(strings.TrimSuffix(args["rate"], "r/s"), 10, 64)
			if err != nil || rate < 1 {
				return nil, fmt.Errorf("rate %q: want N r/s", args["rate"])
			}
			burst, _ := strconv.ParseInt(args["burst"], 10, 64)
			spec := toyProduct + ":rate=" + args["rate"]
			if args.Has("burst") {
				spec += " burst=" + args["burst"]
			}
			if args.Has("nodelay") {
				spec += " nodelay"
			}
			return toyModel{spec: spec, rate: rate, burst: burst}, nil
		},
	})
	gateway.Register(gateway.Format{
		Name:    toyFormat,
		Summary: "tests only: lines of SPEC KEY",
		Sniff:   func(string, []byte) int { return 0 },
		Parse: func(src *gateway.Source) (*gateway.Result, error) {
			r := &gateway.Result{}
			for i, line := range strings.Split(strings.TrimSpace(string(src.Data)), "\n") {
				key, spec, _ := strings.Cut(line, " ")
				at := gateway.Place{File: src.Name, Line: i + 1}
				if spec == "bad" || key == "" {
					return nil, &gateway.Error{File: src.Path, Line: i + 1, Msg: "a bad line"}
				}
				r.Found = append(r.Found, gateway.Found{Product: spec, Key: key, KeySource: key, Name: spec, Location: "line " + at.String(), At: at,
					Promise: gateway.Promise{Limit: 1, Window: time.Second}})
				r.Warnings = append(r.Warnings, gateway.Warning{At: at, Msg: "a toy limit"})
			}
			return r, nil
		},
	})
}

func toyConfig(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toy.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type keyedReport struct {
	Scenario string `json:"scenario"`
	Key      string `json:"key"`
	Results  []struct {
		Algorithm string `json:"algorithm"`
		Requests  int64  `json:"requests"`
		Admitted  int64  `json:"admitted"`
	} `json:"results"`
}

func (r keyedReport) algorithms() []string {
	var out []string
	for _, x := range r.Results {
		out = append(out, x.Algorithm)
	}
	return out
}

func keyedJSON(t *testing.T, args ...string) keyedReport {
	t.Helper()
	out, errOut, code := rlsim(t, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("rlsim %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	var r keyedReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	return r
}

func TestImportPrintsWhatTheConfigurationSets(t *testing.T) {
	for _, tt := range []struct{ file, golden string }{
		{"../gateway/testdata/nginx/nginx.conf", "import-nginx.txt"},
		{"../gateway/testdata/haproxy/haproxy.cfg", "import-haproxy.txt"},
		{"../gateway/testdata/kong/kong.yml", "import-kong.txt"},
		{"../gateway/testdata/traefik/dynamic.toml", "import-traefik.txt"},
		{"../gateway/testdata/envoy/envoy.yaml", "import-envoy.txt"},
	} {
		out, errOut, code := rlsim(t, "import", tt.file)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tt.file, code, errOut)
		}
		golden(t, tt.golden, out)
	}
}

func TestImportJSON(t *testing.T) {
	out, _, code := rlsim(t, "import", "../gateway/testdata/nginx/nginx.conf", "--format", "json")
	if code != 0 {
		t.Fatal(out)
	}
	var r importJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.File != "nginx.conf" || r.Format != "nginx" || len(r.Locations) != 5 || len(r.Scenarios) != 5 || len(r.Warnings) != 1 {
		t.Fatalf("%+v", r)
	}
	v1 := r.Locations[2]
	if !v1.Layered || len(v1.Limits) != 2 || v1.Location != "server api.example.com, location /v1/" {
		t.Fatalf("the layered location: %+v", v1)
	}
	want := importLimit{Spec: "nginx:rate=600r/m burst=50", Product: "nginx", Params: map[string]string{"rate": "600r/m", "burst": "50"},
		Key: "api-key", KeySource: "$http_x_api_key", Name: "perkey", Status: 429, At: "nginx.conf:41", Defined: "nginx.conf:18", KeyAt: "nginx.conf:18",
		Promise: importPromise{Limit: 600, Window: "1m0s", Burst: 51}}
	got := v1.Limits[1]
	if got.Spec != want.Spec || got.Key != want.Key || got.At != want.At || got.Defined != want.Defined || got.Promise != want.Promise || got.Status != want.Status ||
		len(got.Params) != 2 || got.Params["rate"] != "600r/m" || got.Params["burst"] != "50" {
		t.Errorf("limit\n got %+v\nwant %+v", got, want)
	}
	if !strings.Contains(r.Scenarios[2].YAML, "limits:\n  - {name: perip, key: ip, limit: 10, window: 1s, burst: 21}\n") {
		t.Errorf("the layered section:\n%s", r.Scenarios[2].YAML)
	}
}

func TestImportErrorsExitWithOneLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(bad, []byte("http {\n  limit_req zone=nowhere;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"import", bad}, 1, bad + `:2: limit_req zone=nowhere: no limit_req_zone defines zone "nowhere"`},
		{[]string{"import", filepath.Join(dir, "none.conf")}, 1, filepath.Join(dir, "none.conf") + ": no such file or directory"},
		{[]string{"import", notes}, 2, notes + ": cannot tell the configuration format of this file; name it with --config-format"},
		{[]string{"import", notes, "--config-format", "caddy"}, 2, `unknown configuration format "caddy"`},
		{[]string{"import", notes, "--format", "csv"}, 2, `unknown format "csv"`},
		{[]string{"import"}, 2, "import"},
		{[]string{"compare", "--import", bad}, 1, "--import: " + bad + ":2: limit_req zone=nowhere"},
		{[]string{"compare", "--config-format", "nginx"}, 2, "--config-format: names the format of --import's file, and no --import is given"},
		{[]string{"replay", "x.log", "--import", notes}, 2, "--import: " + notes + ": cannot tell"},
		{[]string{"worst-case", "--import", toyConfig(t, "ip bad"), "--config-format", toyFormat}, 1, "toy.conf:1: a bad line"},
		{[]string{"compare", "--import", toyConfig(t, "ip nosuch-kind"), "--config-format", toyFormat}, 1, "--import toy.conf:1: nosuch-kind: this build has no model of nosuch-kind"},
	}
	for _, tt := range tests {
		out, errOut, code := rlsim(t, tt.args...)
		// Warnings may come first; the error is the last line.
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		for _, l := range lines[:len(lines)-1] {
			if !strings.HasPrefix(l, "rlsim: warning: ") {
				t.Errorf("rlsim %s: stderr line %q is neither a warning nor the error", strings.Join(tt.args, " "), l)
			}
		}
		if code != tt.code || !strings.Contains(lines[len(lines)-1], tt.want) || out != "" {
			t.Errorf("rlsim %s: exit %d, stderr %q, stdout %q; want exit %d and one line with %q", strings.Join(tt.args, " "), code, errOut, out, tt.code, tt.want)
		}
	}
}

// --import adds the configuration's specs to the algorithms a run compares and keys the
// run as the configuration keys its limits, unless --key is given.
func TestCompareImportAddsSpecsAndKey(t *testing.T) {
	if algorithms.Lookup(algorithms.NotesTokenBucketName) == nil || slices.Contains(algorithms.Defaults(), algorithms.NotesTokenBucketName) {
		t.Fatal("the test wants a kind outside the defaults")
	}
	conf := toyConfig(t, "ip "+algorithms.NotesTokenBucketName, "ip gcra")
	base := []string{"compare", "--scenario", "nat-crowd", "--config-format", toyFormat, "--import", conf, "--out", ""}
	sc, err := scenario.Load("nat-crowd")
	if err != nil {
		t.Fatal(err)
	}
	r := keyedJSON(t, base...)
	if want := append(sc.Algorithms, algorithms.NotesTokenBucketName); !slices.Equal(r.algorithms(), want) || r.Key != "ip" {
		t.Errorf("the scenario's algorithms and the import: %v keyed %s, want %v keyed ip", r.algorithms(), r.Key, want)
	}
	r = keyedJSON(t, append(base, "--algorithms", "fixed-window", "--key", "user")...)
	if want := []string{"fixed-window", algorithms.NotesTokenBucketName, "gcra"}; !slices.Equal(r.algorithms(), want) || r.Key != "user" {
		t.Errorf("--algorithms and --key: %v keyed %s, want %v keyed user", r.algorithms(), r.Key, want)
	}
	// Keyed by ip, the 2000 users behind one address are one key: nearly all refused.
	byIP := keyedJSON(t, append(base, "--algorithms", "fixed-window")...)
	byUser := keyedJSON(t, append(base, "--algorithms", "fixed-window", "--key", "user")...)
	if byIP.Results[0].Admitted*10 > byUser.Results[0].Admitted {
		t.Errorf("keyed by ip %d admitted, by user %d: the imported key did not take", byIP.Results[0].Admitted, byUser.Results[0].Admitted)
	}
	// Two keys: the first, and a warning.
	_, errOut, code := rlsim(t, "compare", "--scenario", "nat-crowd", "--config-format", toyFormat, "--import", toyConfig(t, "api-key gcra", "ip fixed-window"), "--out", "", "--format", "json")
	if code != 0 || !strings.Contains(errOut, "rlsim: warning: --import: the limits count on api-key, ip; the run keys every request on api-key (--key chooses)") ||
		!strings.Contains(errOut, "rlsim: warning: --import: toy.conf:1: a toy limit") {
		t.Errorf("two keys: exit %d, %s", code, errOut)
	}
}

func TestReplayAndWorstCaseImport(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(boundaryLog()), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := toyConfig(t, "user "+algorithms.NotesTokenBucketName)
	r := keyedJSON(t, "replay", log, "--config-format", toyFormat, "--import", conf, "--algorithms", "fixed-window", "--out", "")
	if want := []string{"fixed-window", algorithms.NotesTokenBucketName}; !slices.Equal(r.algorithms(), want) || r.Key != "user" {
		t.Errorf("replay: %v keyed %s, want %v keyed user", r.algorithms(), r.Key, want)
	}
	r = keyedJSON(t, "replay", log, "--config-format", toyFormat, "--import", conf, "--algorithms", "fixed-window", "--key", "ip", "--out", "")
	if r.Key != "ip" {
		t.Errorf("replay --key ip: keyed %s", r.Key)
	}
	out, errOut, code := rlsim(t, "worst-case", "--config-format", toyFormat, "--import", conf, "--algorithms", "fixed-window", "--budget", "0", "--spans", "1", "--limit", "10", "--window", "10s", "--format", "json", "--out", "")
	if code != 0 || !strings.Contains(out, `"algorithm": "fixed-window"`) || !strings.Contains(out, `"algorithm": "`+algorithms.NotesTokenBucketName+`"`) {
		t.Errorf("worst-case: exit %d %s\n%s", code, errOut, out)
	}
}

// compare --import on the nginx and HAProxy fixtures runs every model they name, once
// this build has the models; until then it says which model it lacks.
func TestCompareImportRunsTheProductModels(t *testing.T) {
	for _, tt := range []struct{ product, file string }{
		{"nginx", "../gateway/testdata/nginx/nginx.conf"},
		{"haproxy", "../gateway/testdata/haproxy/haproxy.cfg"},
	} {
		t.Run(tt.product, func(t *testing.T) {
			res, err := gateway.Read(tt.file, "")
			if err != nil {
				t.Fatal(err)
			}
			if algorithms.Lookup(tt.product) == nil {
				_, errOut, code := rlsim(t, "compare", "--scenario", "token-burst", "--import", tt.file, "--out", "")
				if code != 1 || !strings.Contains(errOut, "this build has no model of "+tt.product) {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				t.Skipf("this build has no model of %s: compare --import refuses it with a clear error; with the model it runs %d specs", tt.product, len(res.Specs()))
			}
			r := keyedJSON(t, "compare", "--scenario", "token-burst", "--import", tt.file, "--out", "")
			for _, s := range res.Specs() {
				if !slices.Contains(r.algorithms(), algorithms.Canonical(s)) {
					t.Errorf("no row for %s in %v", s, r.algorithms())
				}
			}
			if r.Key != res.Keys()[0] {
				t.Errorf("keyed %s, want %s", r.Key, res.Keys()[0])
			}
		})
	}
}

// A product's spec, with its parameters, its spaces and its flag, runs through compare
// and replay as an imported limit and is named by its canonical text.
func TestImportRunsAProductSpec(t *testing.T) {
	conf := toyConfig(t, "ip "+toyProduct+":nodelay burst=20 rate=10r/s", "ip "+toyProduct+":rate=10r/s")
	r := keyedJSON(t, "compare", "--scenario", "token-burst", "--config-format", toyFormat, "--import", conf, "--algorithms", "gcra", "--burst", "21", "--out", "")
	want := []string{"gcra", toyProduct + ":rate=10r/s burst=20 nodelay", toyProduct + ":rate=10r/s"}
	if !slices.Equal(r.algorithms(), want) {
		t.Fatalf("rows %v, want %v", r.algorithms(), want)
	}
	// The toy runs GCRA at 10/s with burst 21 and 1: the first as --burst 21 does.
	if r.Results[1].Admitted != r.Results[0].Admitted || r.Results[2].Admitted >= r.Results[1].Admitted {
		t.Errorf("admitted %d (gcra --burst 21), %d (burst=20), %d (no burst)", r.Results[0].Admitted, r.Results[1].Admitted, r.Results[2].Admitted)
	}
	_, errOut, code := rlsim(t, "compare", "--scenario", "token-burst", "--config-format", toyFormat, "--import", toyConfig(t, "ip "+toyProduct+":rate=fast"), "--out", "")
	if code != 1 || !strings.Contains(errOut, `rlsim: --import toy.conf:1: toy-product: rate "fast": want N r/s`) {
		t.Errorf("a spec the model refuses: exit %d, %s", code, errOut)
	}
}

// The examples that run a product's model run once this build has it.
func init() {
	for line, product := range map[string]string{
		`rlsim compare --scenario token-burst --import examples/import/nginx.conf --out ""`: "nginx",
		`rlsim replay access.log --import examples/import/haproxy.cfg --out ""`:             "haproxy",
	} {
		if algorithms.Lookup(product) == nil {
			exampleSkips[line] = "needs the model of " + product + ", which this build does not have"
		}
	}
}
