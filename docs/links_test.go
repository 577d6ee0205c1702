package docs_test

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// linkTargetRE finds the target of an inline link or image, [text](target) or
// ![alt](target "title"); the text may run over several lines.
var linkTargetRE = regexp.MustCompile(`\]\(<?([^()\s<>]*)>?(?:\s+"[^"]*")?\)`)

// codeSpanRE is an inline code span, whose brackets are not links.
var codeSpanRE = regexp.MustCompile("`[^`]*`")

// TestRelativeLinksResolve holds every relative link and image of README.md and docs/ to
// the tree: the file it names exists, and the anchor after its # (on the same page or
// another page) is a heading of that page, as GitHub names headings. Links to other sites
// are not followed.
func TestRelativeLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	anchorsOf := map[string][]string{} // page → its headings' anchors
	anchors := func(page string) ([]string, error) {
		if a, ok := anchorsOf[page]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(data), "\n")
		fs, err := fences(lines)
		if err != nil {
			return nil, err
		}
		var a []string
		for _, h := range headings(outsideFences(lines, fs)) {
			a = append(a, h.anchor)
		}
		anchorsOf[page] = a
		return a, nil
	}
	links := 0
	for _, page := range docFiles(t, root) {
		lines := readPage(t, root, page)
		fs, err := fences(lines)
		if err != nil {
			t.Fatalf("%s:%v", page, err)
		}
		prose := outsideFences(lines, fs)
		for i := range prose {
			prose[i] = codeSpanRE.ReplaceAllStringFunc(prose[i], func(s string) string {
				return strings.Repeat(" ", len(s))
			})
		}
		text := strings.Join(prose, "\n")
		for _, m := range linkTargetRE.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[2]:m[3]]
			line := 1 + strings.Count(text[:m[0]], "\n")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(page), file))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s:%d: %s leaves the repository", page, line, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s:%d: %s: no file %s", page, line, target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: %s: an anchor into %s, which is not a Markdown page", page, line, target, dest)
				continue
			}
			a, err := anchors(dest)
			if err != nil {
				t.Fatalf("%s: %v", dest, err)
			}
			if !slices.Contains(a, anchor) {
				t.Errorf("%s:%d: %s: %s has no heading whose anchor is #%s", page, line, target, dest, anchor)
			}
		}
	}
	if links < 50 {
		t.Fatalf("read %d relative links in README.md and docs/; the pattern reads too few", links)
	}
}

// contentsLinkRE is one entry of README.md's table of contents: [text](#anchor).
var contentsLinkRE = regexp.MustCompile(`\[([^\]]+)\]\(#([^)\s]+)\)`)

// TestReadmeContentsMatchHeadings holds README.md's table of contents (the paragraph that
// starts "Contents:") to its sections: one entry per "## " heading, in their order, each
// linking to that heading's anchor and reading as the heading reads (without its
// backticks).
func TestReadmeContentsMatchHeadings(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	lines := readPage(t, root, "README.md")
	fs, err := fences(lines)
	if err != nil {
		t.Fatalf("README.md:%v", err)
	}
	prose := outsideFences(lines, fs)
	start := slices.IndexFunc(prose, func(l string) bool { return strings.HasPrefix(l, "Contents:") })
	if start < 0 {
		t.Fatal(`README.md has no table of contents (a paragraph that starts "Contents:")`)
	}
	end := start
	for end < len(prose) && strings.TrimSpace(prose[end]) != "" {
		end++
	}
	toc := strings.Join(prose[start:end], "\n")

	var want, got []string
	for _, h := range headings(prose) {
		if h.level == 2 {
			want = append(want, strings.ReplaceAll(h.text, "`", "")+" → #"+h.anchor)
		}
	}
	for _, m := range contentsLinkRE.FindAllStringSubmatch(toc, -1) {
		got = append(got, strings.Join(strings.Fields(m[1]), " ")+" → #"+m[2])
	}
	if len(want) < 5 {
		t.Fatalf("README.md has %d sections; the heading pattern reads too few", len(want))
	}
	if !slices.Equal(got, want) {
		t.Errorf("README.md's table of contents:\n  %s\nits sections:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
