package docs_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

// TestScenarioPageExample: the example of docs/scenarios.md is a scenario the decoder
// takes, with the values its comments give, so the page cannot drift from the format.
func TestScenarioPageExample(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	lines := readPage(t, root, "docs/scenarios.md")
	blocks, err := fences(lines)
	if err != nil {
		t.Fatalf("docs/scenarios.md:%v", err)
	}
	i := slices.IndexFunc(blocks, func(f fence) bool { return f.kind() == "yaml" })
	if i < 0 {
		t.Fatal("docs/scenarios.md has no yaml block")
	}
	b := blocks[i]
	example := strings.Join(lines[b.open+1:b.shut], "\n")
	sc, err := scenario.Parse("docs/scenarios.md", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "boundary-burst" || sc.Seed == nil || *sc.Seed != 1 || sc.Key != "user" ||
		!slices.Equal(sc.Algorithms, []string{"fixed-window", "sliding-log"}) || len(sc.Traffic) != 2 {
		t.Errorf("the example reads as name %q, seed %v, key %q, algorithms %v, %d traffic entries; its comments say boundary-burst, 1, user, [fixed-window sliding-log], 2",
			sc.Name, sc.Seed, sc.Key, sc.Algorithms, len(sc.Traffic))
	}
}

// TestReadmeListsEveryBuiltin: the first column of README.md's table of built-in scenarios
// names every scenario of the catalogue, and no other.
func TestReadmeListsEveryBuiltin(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	lines := readPage(t, root, "README.md")
	start := slices.Index(lines, "## Built-in scenarios")
	if start < 0 {
		t.Fatal(`README.md has no "## Built-in scenarios"`)
	}
	var listed []string
	for _, l := range lines[start+1:] {
		if strings.HasPrefix(l, "## ") {
			break
		}
		cells := strings.Split(l, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, name := range strings.Split(cells[1], "`") {
			if n := strings.TrimSpace(name); n != "" && !strings.ContainsAny(n, " ,()") {
				listed = append(listed, n)
			}
		}
	}
	slices.Sort(listed)
	if want := scenario.Builtins(); !slices.Equal(listed, want) {
		t.Errorf("README.md's built-in scenarios:\n  %v\nthe catalogue:\n  %v", listed, want)
	}
}
