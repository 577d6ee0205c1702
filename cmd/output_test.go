package cmd

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/report"
)

// readTree returns every file under dir by its slash path relative to dir.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestOutFolderHoldsResultsSummaryChartsAndIndex(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst", "--scenario", "sliding-estimate",
		"--charts", "svg", "--out", dir, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files := readTree(t, dir)
	for _, sc := range []string{"boundary-burst", "sliding-estimate"} {
		for _, name := range []string{"results.json", "results.csv", "timeline.csv", "summary.md",
			"admitted-timeline.svg", "window-timeline.svg", "accuracy.svg", "memory.svg"} {
			if len(files[sc+"/"+name]) == 0 {
				t.Errorf("%s/%s missing or empty", sc, name)
			}
		}
		if !strings.Contains(out, `"scenario": "`+sc+`"`) {
			t.Errorf("stdout lacks %s", sc)
		}
	}
	// results.json is the stdout object of that scenario alone.
	one, _, _ := rlsim(t, "compare", "--scenario", "boundary-burst", "--format", "json")
	if string(files["boundary-burst/results.json"]) != one {
		t.Error("boundary-burst/results.json differs from `compare --scenario boundary-burst --format json`")
	}
	summary := string(files["boundary-burst/summary.md"])
	for _, want := range []string{"# boundary-burst", "| algorithm |", "| over-admission |", "| fixed-window | 200 | 2.00 |",
		"Over the limit of 100 in some trailing 1m0s window: fixed-window 2.00× (200).", "![", "(window-timeline.svg)"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, summary)
		}
	}
	index := string(files["index.html"])
	for _, want := range []string{`<table class="verdict">`, `<td class="bydesign" title="boundary-burst, fixed-window: above the promise, within the algorithm&#39;s own bound"><a href="#boundary-burst">~ 2.00`,
		`<a href="#sliding-estimate">`, `<img src="boundary-burst/window-timeline.svg"`,
		"<th>over-<br>admission</th>", `href="boundary-burst/summary.md"`, "fixed-window 2.00× (200)"} {
		if !strings.Contains(index, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", `src="http`, `href="http`, "@import", "<?xml"} {
		if strings.Contains(index, bad) {
			t.Errorf("index.html contains %q: it must be static and self-contained", bad)
		}
	}
	// The charts are files the page links, not documents it embeds: four per scenario,
	// and the boundary burst's zoom on its 200 ms.
	if n := strings.Count(index, "<img src="); n != 9 || strings.Contains(index, "<svg") ||
		!strings.Contains(index, `<img src="boundary-burst/window-zoom.svg"`) {
		t.Errorf("index.html links %d images, want 9, and embeds none", n)
	}
}

func TestSameSeedSameFiles(t *testing.T) {
	run := func(seed, charts string) map[string][]byte {
		dir := t.TempDir()
		_, errOut, code := rlsim(t, "compare", "--scenario", "testdata/small-poisson.yaml",
			"--seed", seed, "--charts", charts, "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return readTree(t, dir)
	}
	a, b := run("3", "svg"), run("3", "svg")
	if len(a) != len(b) || len(a) != 10 { // nine and the manifest
		t.Fatalf("%d files vs %d", len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between two runs with the same seed", name)
		}
	}
	c := run("4", "svg")
	for _, name := range []string{"small-poisson/results.json", "small-poisson/window-timeline.svg", "small-poisson/timeline.csv"} {
		if bytes.Equal(a[name], c[name]) {
			t.Errorf("%s is the same with another seed: the seed does not reach it", name)
		}
	}
}

// Golden files for one scenario's result files: JSON, CSV, Markdown and an SVG chart.
func TestOutFilesGolden(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := rlsim(t, "run", "boundary-burst", "--charts", "png,svg", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files := readTree(t, dir)
	for _, name := range []string{"admitted-timeline.png", "window-timeline.png", "window-zoom.png", "accuracy.png", "memory.png"} {
		if !bytes.HasPrefix(files["boundary-burst/"+name], []byte("\x89PNG")) {
			t.Errorf("boundary-burst/%s is not a PNG", name)
		}
	}
	for _, name := range []string{"results.json", "results.csv", "summary.md", "window-timeline.svg", "window-zoom.svg"} {
		golden(t, "out-boundary-burst-"+name, string(files["boundary-burst/"+name]))
	}
}

func TestFailedRunLeavesPreviousResultsIntact(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst", "--charts", "svg", "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	before := readTree(t, dir)
	bad := [][]string{
		{"compare", "--scenario", "sliding-estimate", "--scenario", "../scenario/testdata/bad/negative-count.yaml", "--out", dir},
		{"compare", "--scenario", "boundary-burst", "--charts", "gif", "--out", dir},
		{"compare", "--scenario", "boundary-burst", "--seed", "9", "--algorithms", "nope", "--out", dir},
	}
	for _, args := range bad {
		if _, _, code := rlsim(t, args...); code == 0 {
			t.Fatalf("%v succeeded", args)
		}
	}
	after := readTree(t, dir)
	if len(after) != len(before) {
		t.Fatalf("files before %d, after %d", len(before), len(after))
	}
	for name, data := range before {
		if !bytes.Equal(data, after[name]) {
			t.Errorf("%s changed after a failed run", name)
		}
	}
}

func TestOutFolderErrors(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := rlsim(t, "run", "boundary-burst", "--out", blocker)
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--out "+blocker) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = rlsim(t, "run", "boundary-burst", "--charts", "svg,gif")
	if code != 2 || !strings.Contains(errOut, `--charts: unknown chart format "gif"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestChartsNoneAndNoOut(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := rlsim(t, "run", "boundary-burst", "--charts", "none", "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for name := range readTree(t, dir) {
		if strings.HasSuffix(name, ".svg") || strings.HasSuffix(name, ".png") {
			t.Errorf("--charts none wrote %s", name)
		}
	}
	empty := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(empty); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if _, errOut, code := rlsim(t, "run", "boundary-burst", "--out", ""); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf(`--out "" wrote %v`, left)
	}
}

func TestFolderNamesStayInside(t *testing.T) {
	used := map[string]bool{"index.html": true}
	for in, want := range map[string]string{"../../etc": "-..-etc", "a b": "a-b", "": "scenario", "index.html": "index.html-2"} {
		if got := folderName(in, used); got != want {
			t.Errorf("folderName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseCharts(f *testing.F) {
	for _, s := range []string{"svg", "png,svg", "none", "", "svg,svg", "gif", "png, svg", ",", "svg,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		formats, err := parseCharts(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--charts: ") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, f := range formats {
			if (f != "svg" && f != "png") || seen[f] {
				t.Fatalf("parseCharts(%q) = %v", s, formats)
			}
			seen[f] = true
		}
	})
}

// TestResultsFolderHoldsOneRun: a run of one scenario after a run of two leaves the
// results folder with that run's files only — the other scenario's folder is gone, its
// files having been listed in the earlier run's manifest — while a file of the user's
// stays; index.html links every file of the run and nothing that is not there.
func TestResultsFolderHoldsOneRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if _, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst", "--scenario", "token-burst", "--out", dir, "--charts", "svg"); code != 0 {
		t.Fatal(errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "token-burst", "results.json")); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("mine"), 0o644)
	if _, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst", "--out", dir, "--charts", "svg"); code != 0 {
		t.Fatal(errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "token-burst")); !os.IsNotExist(err) {
		t.Errorf("the earlier run's token-burst folder is still there (%v)", err)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Errorf("a file of the user's was removed: %v", err)
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:href|src)="([^"#][^"]*)"`).FindAllStringSubmatch(string(index), -1) {
		linked[m[1]] = true
	}
	present := map[string]bool{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			present[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	for f := range present {
		if !linked[f] && f != "index.html" && f != manifestName && f != "notes.txt" {
			t.Errorf("%s is in the folder but index.html does not link it", f)
		}
	}
	for f := range linked {
		if !present[f] {
			t.Errorf("index.html links %s, which is not in the folder", f)
		}
	}
	if len(linked) < 5 {
		t.Errorf("index.html links only %v", linked)
	}
}

// TestCompareEndsWithTheRecapAndThePath: after a report of several scenarios, the last
// screen of a 100×40 terminal holds the recap (and, on a terminal, where the files went:
// TestProgressOnATerminalOnly).
func TestCompareEndsWithTheRecapAndThePath(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := "out"
	out, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst", "--scenario", "token-burst", "--scenario", "page-load", "--out", dir, "--charts", "none")
	if code != 0 {
		t.Fatal(errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := strings.Join(lines[max(len(lines)-40, 0):], "\n")
	for _, want := range []string{"Recap of 3 scenarios", "  fixed-window    kept it in 0 of 2, worst ~ 2.00× (boundary-burst)", "  sliding-log     kept it in 3 of 3",
		"  (~ within the algorithm's own documented bound, by design; ✗ beyond it)"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last 40 lines lack %q:\n%s", want, last)
		}
	}
	for _, l := range lines[max(len(lines)-12, 0):] {
		if w := report.DisplayWidth(l); w > 100 {
			t.Errorf("%d columns: %s", w, l)
		}
	}
}
