package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/gateway"
)

// snippetMarkRE is the comment before each example of docs/snippets.md: the spec and key
// whose snippet the fenced block after it shows.
var snippetMarkRE = regexp.MustCompile(`^<!-- snippet: (.+) \| (\S+) -->$`)

// TestSnippetExamples holds every example of docs/snippets.md to what gateway.Snippet
// writes today: the fenced block after each "<!-- snippet: SPEC | KEY -->" is its output,
// byte for byte. go test ./docs -run TestSnippetExamples -update rewrites them.
func TestSnippetExamples(t *testing.T) {
	path := filepath.Join("..", "docs", "snippets.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []string
	examples, products := 0, map[string]bool{}
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		m := snippetMarkRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("docs/snippets.md:%d: the mark is not followed by a fenced block", i+1)
		}
		end := i + 2
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		if end == len(lines) {
			t.Fatalf("docs/snippets.md:%d: the fenced block is never closed", i+2)
		}
		want, err := gateway.Snippet(m[1], m[2])
		if err != nil {
			t.Fatalf("docs/snippets.md:%d: %v", i+1, err)
		}
		got := strings.Join(lines[i+2:end], "\n") + "\n"
		if got != want && !*update {
			t.Errorf("docs/snippets.md:%d: the snippet of %q keyed %s is now (go test ./docs -run TestSnippetExamples -update rewrites it):\n%s\nbut the file shows:\n%s", i+1, m[1], m[2], want, got)
		}
		out = append(out, lines[i+1])
		out = append(out, strings.Split(strings.TrimSuffix(want, "\n"), "\n")...)
		out = append(out, "```")
		i = end
		examples++
		product, _, _ := strings.Cut(m[1], ":")
		products[product] = true
	}
	for _, p := range []string{"nginx", "haproxy", "envoy-local", "kong", "traefik", "token-bucket"} {
		if !products[p] {
			t.Errorf("docs/snippets.md has no example of %s", p)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d examples", examples)
}
