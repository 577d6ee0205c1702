package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// docFiles returns README.md and every Markdown file under docs/, as paths relative to
// the repository's root, README.md first and the rest sorted: the pages the tests of this
// package read. A page added to docs/ is read without being listed anywhere.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		pages = append(pages, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("docs/ holds %d Markdown pages; the walk reads too few", len(pages))
	}
	slices.Sort(pages)
	return append([]string{"README.md"}, pages...)
}

// fence is one fenced block of a Markdown page.
type fence struct {
	info       string // the info string after the opening backticks, as written
	open, shut int    // 0-based lines of the opening and closing fence
}

// kind is the block's language, the first word of its info string, lower-cased: "" for a
// block without one.
func (f fence) kind() string {
	if w := strings.Fields(f.info); len(w) > 0 {
		return strings.ToLower(w[0])
	}
	return ""
}

// fences finds the fenced blocks of a page's lines. A fence is three or more backticks,
// indented or not (a block inside a list item is indented); a block closes at the first
// fence of at least as many backticks with no info string. A block never closed is an
// error naming its line.
func fences(lines []string) ([]fence, error) {
	var out []fence
	for i := 0; i < len(lines); i++ {
		n, info, ok := fenceLine(lines[i])
		if !ok {
			continue
		}
		f := fence{info: info, open: i, shut: -1}
		for j := i + 1; j < len(lines); j++ {
			if m, rest, ok := fenceLine(lines[j]); ok && m >= n && rest == "" {
				f.shut = j
				break
			}
		}
		if f.shut < 0 {
			return nil, &lineError{i + 1, "fenced block is never closed"}
		}
		out = append(out, f)
		i = f.shut
	}
	return out, nil
}

// fenceLine reports whether line is a fence: its run of backticks and its info string.
func fenceLine(line string) (ticks int, info string, ok bool) {
	s := strings.TrimSpace(line)
	for ticks < len(s) && s[ticks] == '`' {
		ticks++
	}
	if ticks < 3 {
		return 0, "", false
	}
	return ticks, strings.TrimSpace(s[ticks:]), true
}

// lineError is an error at a 1-based line of a page.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return strconv.Itoa(e.line) + ": " + e.msg }

// outsideFences returns the page's lines with every fenced block's lines, fences included,
// blanked: what Markdown reads as prose, headings and links.
func outsideFences(lines []string, fs []fence) []string {
	out := slices.Clone(lines)
	for _, f := range fs {
		for i := f.open; i <= f.shut; i++ {
			out[i] = ""
		}
	}
	return out
}

// heading is an ATX heading of a page (outside its fenced blocks).
type heading struct {
	level  int
	text   string // as written, without the #s
	anchor string // the anchor GitHub gives it, without the #
	line   int    // 1-based
}

// headings lists a page's headings with the anchors GitHub gives them: the second heading
// of the same anchor gets "-1", the third "-2".
func headings(prose []string) []heading {
	var out []heading
	seen := map[string]int{}
	for i, l := range prose {
		level := 0
		for level < len(l) && l[level] == '#' {
			level++
		}
		if level == 0 || level > 6 || level >= len(l) || l[level] != ' ' {
			continue
		}
		text := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(l[level:]), "#"))
		anchor := slug(text)
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor += "-" + strconv.Itoa(n)
		} else {
			seen[anchor] = 1
		}
		out = append(out, heading{level: level, text: text, anchor: anchor, line: i + 1})
	}
	return out
}

// slug is the anchor GitHub makes of a heading's text: lower case, letters, digits,
// underscores and hyphens kept, each space a hyphen, everything else (punctuation,
// backticks, symbols such as × and —) dropped.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// readPage reads a page of the repository and splits it into lines.
func readPage(t *testing.T, root, page string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(data), "\n")
}

func TestSlugIsGitHubs(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"Quick start", "quick-start"},
		{"Your gateway's own configuration: `rlsim import`", "your-gateways-own-configuration-rlsim-import"},
		{"Redis pipelining: `--redis URL --pipeline N`", "redis-pipelining---redis-url---pipeline-n"},
		{"results.csv", "resultscsv"},
		{"The read-decide-write race (shared-racy)", "the-read-decide-write-race-shared-racy"},
		{"Example: 200 requests in 200 ms through a 100-per-minute limit", "example-200-requests-in-200-ms-through-a-100-per-minute-limit"},
		{"state_bytes_per_key × keys — über", "state_bytes_per_key--keys--über"},
	} {
		if got := slug(c.text); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	got := headings([]string{"# A", "## B", "## B", "text", "### B", "#not a heading"})
	var anchors []string
	for _, h := range got {
		anchors = append(anchors, h.anchor)
	}
	if want := []string{"a", "b", "b-1", "b-2"}; !slices.Equal(anchors, want) {
		t.Errorf("anchors %q, want %q", anchors, want)
	}
}
