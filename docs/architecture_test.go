package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
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
