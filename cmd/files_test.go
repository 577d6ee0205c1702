package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// names lists dir's entries, hidden ones included.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An outputSet puts its files in place together or not at all: when one of them cannot
// be completed, the other, already complete, does not replace its old version either,
// and nothing is left beside them.
func TestOutputSetCommitsTogetherOrNothing(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	a, c := filepath.Join(dir, "a.csv"), filepath.Join(sub, "c.csv")
	writeFile(t, a, "old a")
	writeFile(t, c, "old c")

	var s outputSet
	if err := s.add(a, []byte("new a")); err != nil {
		t.Fatal(err)
	}
	if err := s.add(c, []byte("new c")); err != nil {
		t.Fatal(err)
	}
	// c's folder goes away before the commit: c cannot be completed there.
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	if err := s.commit(); err == nil {
		t.Fatal("commit into a folder that is gone succeeded")
	}
	if got := string(readFile(t, a)); got != "old a" {
		t.Errorf("a.csv = %q after a failed commit, want the old version", got)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"a.csv"}) {
		t.Errorf("after a failed commit the folder holds %v, want only a.csv", got)
	}

	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	s = outputSet{}
	w, err := s.create(a)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("new a"))
	s.add(c, []byte("new c"))
	if err := s.commit(); err != nil {
		t.Fatal(err)
	}
	if string(readFile(t, a)) != "new a" || string(readFile(t, c)) != "new c" {
		t.Error("a committed set did not replace both files")
	}
	if got := names(t, dir); !slices.Equal(got, []string{"a.csv", "sub"}) {
		t.Errorf("after the commit the folder holds %v", got)
	}
	if info, err := os.Stat(a); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("a.csv mode %v (%v), want 0644", info.Mode(), err)
	}
}

// On Linux a staged file has no name until it is complete: a run killed while writing
// leaves nothing in the folder, and discard frees it.
func TestStagedFileHasNoName(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("O_TMPFILE is Linux's")
	}
	dir := t.TempDir()
	if f, err := openAnonymous(filepath.Join(dir, "probe")); err != nil {
		t.Skipf("no O_TMPFILE here: %v", err)
	} else {
		f.Close()
	}
	var s outputSet
	w, err := s.create(filepath.Join(dir, "decisions.csv"))
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(strings.Repeat("x", 1<<20)))
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("while staged the folder holds %v", got)
	}
	if dropped := s.discard(); !slices.Equal(dropped, []string{filepath.Join(dir, "decisions.csv")}) {
		t.Errorf("discard dropped %v", dropped)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("after discard the folder holds %v", got)
	}
}

// An --out that cannot be written fails the run after the simulation: the decisions
// file, complete by then, is not written either, and an old one stays as it was.
func TestOutFailureWritesNoDecisions(t *testing.T) {
	dir := t.TempDir()
	decisions := filepath.Join(dir, "decisions.csv")
	writeFile(t, decisions, "old decisions\n")
	notAFolder := filepath.Join(dir, "out")
	writeFile(t, notAFolder, "a file where --out wants a folder\n")
	out, errOut, code := rlsim(t, "run", "boundary-burst", "--decisions", decisions, "--out", notAFolder)
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--out "+notAFolder) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := string(readFile(t, decisions)); got != "old decisions\n" {
		t.Errorf("decisions file overwritten: %.60q", got)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"decisions.csv", "out"}) {
		t.Errorf("the folder holds %v", got)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A report that cannot reach stdout (a full disk under a redirection) writes no file.
func TestFailedStdoutWritesNoFiles(t *testing.T) {
	dir := t.TempDir()
	decisions := filepath.Join(dir, "decisions.csv")
	var errb strings.Builder
	code := Main([]string{"run", "boundary-burst", "--decisions", decisions, "--out", filepath.Join(dir, "out"), "--charts", "none"},
		IO{In: strings.NewReader(""), Out: failingWriter{}, Err: &errb})
	if code != 1 || !strings.Contains(errb.String(), "writing the report to stdout: no space left on device") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("file written: %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A run that fails after staging its results folder leaves no folder it made behind:
// not out/ nor the scenario's folder under it, however deep; a folder that was there
// before stays, and so does one someone filled meanwhile.
func TestFailedRunLeavesNoEmptyFolders(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "new", "deeper", "out")
	var errb strings.Builder
	code := Main([]string{"run", "boundary-burst", "--out", out, "--charts", "svg"},
		IO{In: strings.NewReader(""), Out: failingWriter{}, Err: &errb})
	if code != 1 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the folder the run was given: %v", entries)
	}

	var s outputSet
	kept := filepath.Join(dir, "kept")
	if err := os.Mkdir(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := stageOutFiles(&s, kept, []outFile{{"a/b/c.txt", []byte("x")}, {"a/d.txt", []byte("y")}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kept, "a", "theirs.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.discard()
	if _, err := os.Stat(filepath.Join(kept, "a", "b")); !os.IsNotExist(err) {
		t.Errorf("the empty folder a/b stays: %v", err)
	}
	if _, err := os.Stat(filepath.Join(kept, "a", "theirs.txt")); err != nil {
		t.Errorf("a folder holding someone's file went: %v", err)
	}
}
