package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/algorithms"
)

// architecture.md's import list is what `go list` reports, its table names every package
// and no other, and every file its recipes point at exists: the picture cannot drift from
// the code.
func TestArchitectureMatchesTheCode(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)

	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const module = "github.com/rlsim/rlsim/"
	var want, packages []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok || pkg == "docs" {
			continue // the main package and this one
		}
		packages = append(packages, pkg)
		var deps []string
		for _, imp := range fields[1:] {
			if dep, ok := strings.CutPrefix(imp, module); ok {
				deps = append(deps, dep)
			}
		}
		if len(deps) > 0 {
			want = append(want, pkg+" → "+strings.Join(deps, " "))
		}
	}
	_, block, _ := strings.Cut(doc, "```imports\n")
	block, _, _ = strings.Cut(block, "```")
	if got := strings.Split(strings.TrimSpace(block), "\n"); !slices.Equal(got, want) {
		t.Errorf("the import list differs from the code; it should read:\n%s", strings.Join(want, "\n"))
	}

	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z/]+)/` \\|").FindAllStringSubmatch(doc, -1) {
		rows = append(rows, m[1])
	}
	slices.Sort(rows)
	slices.Sort(packages)
	if !slices.Equal(rows, packages) {
		t.Errorf("the table names %v; the packages are %v", rows, packages)
	}

	for _, m := range regexp.MustCompile("`([a-z/_]+\\.(go|lua))`").FindAllStringSubmatch(doc, -1) {
		if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
			t.Errorf("architecture.md points at %s: %v", m[1], err)
		}
	}
}

// namesOutsideTheirFiles are the places that still name a placement or a fault by string
// outside its own file: the report and the claims judge rows of the JSON output by their
// placement, a sweep parameter applies to one placement alone, and two words are another
// concept's too (the retry experiments' and closed-loop clients' "shared" key, global
// sync's "owner" target). The
// test fails on a name anywhere else, and on an entry here that is no longer needed, so
// the list only shrinks.
var namesOutsideTheirFiles = []string{
	"claims/designs.go owner",
	"claims/fleet.go leased",
	"claims/fleet.go shared",
	"claims/fleet.go shared-racy",
	"claims/fleet.go two-tier",
	"cluster/globalsync.go owner",
	"cmd/backoff_ratelimited.go shared",
	"cmd/complete.go shared",
	"report/distributed.go owner",
	"report/distributed.go shared-racy",
	"report/fleet_designs.go owner",
	"report/fleet_designs.go global-sync",
	"render/fleet_race.go shared",
	"render/fleet_race.go shared-racy",
	"scenario/clients.go shared",
	"sweep/cluster.go global-sync",
}

// Each placement (cluster.registerPlacement) and each fault (scenario.RegisterFault) is
// one file: its name, as a Go string, appears in that file and in tests only. Placement
// names are looked for in every package that decides, runs or renders a fleet; fault
// names in those that read a scenario's faults (cluster's own fields are called latency,
// skew and eviction too).
func TestPlacementAndFaultNamesLiveInTheirFiles(t *testing.T) {
	placements := registered(t, "../cluster", "registerPlacement")
	faults := registered(t, "../scenario", "RegisterFault")
	if len(placements) < 8 || len(faults) < 8 {
		t.Fatalf("found %d placements and %d faults registered", len(placements), len(faults))
	}
	var found []string
	scan := func(names map[string]string, dirs ...string) {
		for _, dir := range dirs {
			for path, lits := range stringLiterals(t, "../"+dir) {
				for _, lit := range lits {
					if home, ok := names[lit]; ok && home != path {
						found = append(found, path+" "+lit)
					}
				}
			}
		}
	}
	scan(placements, "cluster", "run", "scenario", "sweep", "report", "render", "claims", "cmd", "internal/pool")
	scan(faults, "scenario", "run", "sweep", "claims", "cmd")
	checkAllowList(t, found, namesOutsideTheirFiles, "namesOutsideTheirFiles",
		"a placement or fault named outside its own file; ask the registry (cluster.PlacementOf, a fault's type) instead")
}

// checkAllowList fails on each place of found that the allow-list named list does not
// hold (with why), and on each entry of the list found no longer holds, so that the list
// only shrinks.
func checkAllowList(t *testing.T, found, list []string, name, why string) {
	t.Helper()
	slices.Sort(found)
	found = slices.Compact(found)
	for _, f := range found {
		if !slices.Contains(list, f) {
			t.Errorf("%s: %s", f, why)
		}
	}
	for _, a := range list {
		if !slices.Contains(found, a) {
			t.Errorf("%s lists %q, which no longer names it: take it off the list", name, a)
		}
	}
}

// algorithmNamesOutside are the places of worstcase, store, cluster and report that name
// an algorithm outside its own file: three placements are a mechanism that has its own
// algorithms (Gubernator's token and leaky buckets, tokens leased from a bucket, the
// fixed window's INCR-then-EXPIRE), the store's slot report counts the notes' two-key
// script by its name, and the GCRA's script is named as its algorithm is.
var algorithmNamesOutside = []string{
	"cluster/gubernator.go algorithms.LeakyBucketName",
	"cluster/gubernator.go algorithms.TokenBucketName",
	"cluster/leased.go algorithms.TokenBucketName",
	"cluster/nonatomic.go algorithms.FixedWindowName",
	"store/scripts.go gcra",
	"store/slots.go notes-sliding-window",
}

// An algorithm, and each product's model, is one file that registers itself: the
// packages that place, size, bound and measure its decisions never name it, by a string
// (a spec too, "kong:…") or by its name's constant (algorithms.KongName), but ask the
// registry (its Form, Script, Counters) instead. The list above only shrinks.
func TestAlgorithmNamesLiveInTheirFiles(t *testing.T) {
	var kinds []string
	for _, k := range algorithms.Kinds() {
		kinds = append(kinds, k.Name)
	}
	names := func(lit string) []string {
		var out []string
		for _, k := range kinds {
			if lit == k || strings.HasPrefix(lit, k+":") {
				out = append(out, k)
			}
		}
		return out
	}
	var found []string
	for _, dir := range []string{"worstcase", "store", "cluster", "report"} {
		for path, lits := range stringLiterals(t, "../"+dir) {
			for _, lit := range lits {
				for _, k := range names(lit) {
					found = append(found, path+" "+k)
				}
			}
		}
		for path, file := range parseDir(t, "../"+dir) {
			ast.Inspect(file, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "algorithms" && strings.HasSuffix(sel.Sel.Name, "Name") && sel.Sel.Name != "Name" {
						found = append(found, path+" algorithms."+sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
	checkAllowList(t, found, algorithmNamesOutside, "algorithmNamesOutside",
		"an algorithm named outside its own file; ask the registry (algorithms.Kind) instead")
}

// registered maps each name registered in dir by calls of register (a composite literal
// with a Name field) to the file, relative to the module, that registers it.
func registered(t *testing.T, dir, register string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for path, file := range parseDir(t, dir) {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != register || len(call.Args) != 1 {
				return true
			}
			lit, ok := call.Args[0].(*ast.CompositeLit)
			if !ok {
				return true
			}
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "Name" {
						if s, ok := kv.Value.(*ast.BasicLit); ok && s.Kind == token.STRING {
							name, _ := strconv.Unquote(s.Value)
							out[name] = path
						}
					}
				}
			}
			return true
		})
	}
	return out
}

// stringLiterals are the string constants of each non-test Go file in dir, by file.
func stringLiterals(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for path, file := range parseDir(t, dir) {
		ast.Inspect(file, func(n ast.Node) bool {
			if s, ok := n.(*ast.BasicLit); ok && s.Kind == token.STRING {
				if v, err := strconv.Unquote(s.Value); err == nil {
					out[path] = append(out[path], v)
				}
			}
			return true
		})
	}
	return out
}

// parseDir parses the non-test Go files of dir, by their path relative to the module.
func parseDir(t *testing.T, dir string) map[string]*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(filepath.ToSlash(filepath.Join(dir, e.Name())), "../")] = f
	}
	return out
}

// One of each: a worker pool and a priority queue are where they are owned. errgroup is
// internal/pool's alone; container/heap only the two tables that move an entry in place
// (architecture.md, "One of each"). Tests may use either, as an oracle or a peer.
func TestOneWorkerPoolAndOneQueue(t *testing.T) {
	owners := map[string][]string{
		"golang.org/x/sync/errgroup": {"internal/pool/pool.go"},
		"container/heap":             {"cluster/eviction.go", "server/keys.go"},
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		for path, f := range parseDir(t, filepath.Join("..", rel)) {
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if _, ok := owners[p]; ok {
					found[p] = append(found[p], path)
				}
			}
		}
	}
	for imp, want := range owners {
		got := found[imp]
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s is imported by %v, want only %v", imp, got, want)
		}
	}
}

// renderers are the packages that may link a rendering library: the commands, the
// renderer and its charts. Every other package decides or measures, and links none.
var renderers = []string{"", "cmd", "render", "render/chart"}

// Nothing that decides or measures links gonum, tablewriter or html/template, directly or
// through another package: a run, a fleet or a measurement costs no rendering code, and
// the measuring package stays apart from the one that draws what it measured.
func TestDecidingAndMeasuringLinkNoRendering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const module = "github.com/rlsim/rlsim"
	rendering := func(dep string) bool {
		return dep == "html/template" || strings.HasPrefix(dep, "gonum.org/") ||
			strings.HasPrefix(dep, "github.com/olekukonko/tablewriter")
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok || (pkg != "" && pkg[0] != '/') {
			continue // not the module's own
		}
		pkg = strings.TrimPrefix(pkg, "/")
		if slices.Contains(renderers, pkg) || pkg == "docs" {
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if rendering(dep) {
				t.Errorf("%s links %s: it decides or measures, and must not import rendering (move the drawing to render/)", pkg, dep)
				break
			}
		}
	}
	if checked < 15 {
		t.Errorf("checked %d packages; go list found too few", checked)
	}
}

// sharedRetryNames is how many of report.RetryResult's JSON names another struct may
// hold. A row of the retry metrics needs more (strategy, calls_mean, peak_arrivals,
// give_ups, ...); a struct that merely mentions a few of the words, such as a verdict's
// clients and give-ups, stays under it (two today).
const sharedRetryNames = 3

// One retry-result type: report.RetryResult is the only struct, named or not, in any
// non-test file of the module whose JSON names are the retry metrics. backoff measures it,
// a scenario's clients fill it, `rlsim backoff` and the claims read it; a copy of its
// fields elsewhere is a second shape to keep in step, and fails here.
func TestOneRetryResultType(t *testing.T) {
	files := map[string]*ast.File{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			maps.Copy(files, parseDir(t, path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	jsonNames := func(st *ast.StructType) []string {
		var names []string
		for _, f := range st.Fields.List {
			if f.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(f.Tag.Value)
			name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			if name != "" && name != "-" {
				names = append(names, name)
			}
		}
		return names
	}
	var retry []string
	type shape struct {
		at    string
		names []string
	}
	var shapes []shape
	for path, file := range files {
		ast.Inspect(file, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok && path == "report/retries.go" && ts.Name.Name == "RetryResult" {
				retry = jsonNames(ts.Type.(*ast.StructType))
				return false
			}
			if st, ok := n.(*ast.StructType); ok {
				shapes = append(shapes, shape{path, jsonNames(st)})
			}
			return true
		})
	}
	if len(retry) < 20 {
		t.Fatalf("report/retries.go: RetryResult has %d JSON names, want the retry metrics", len(retry))
	}
	for _, s := range shapes {
		var shared []string
		for _, name := range s.names {
			if slices.Contains(retry, name) {
				shared = append(shared, name)
			}
		}
		if len(shared) > sharedRetryNames {
			t.Errorf("%s: a struct with RetryResult's JSON names %v; use report.RetryResult (BackoffResults for `rlsim backoff`'s layout)", s.at, shared)
		}
	}
}
