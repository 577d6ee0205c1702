package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackoffChartsSameSeedSameBytes: the herd and the experiment's two figures are
// written under --out, and the same seed draws the same bytes.
func TestBackoffChartsSameSeedSameBytes(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		dir := t.TempDir()
		_, errOut, code := rlsim(t, append(append([]string{"backoff"}, args...), "--charts", "svg", "--out", dir)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return dir
	}
	storm := []string{"--model", "rate-limited", "--clients", "200", "--limit", "20", "--runs", "2", "--strategies", "exponential,full-jitter"}
	a, b := run(storm...), run(storm...)
	herd := readFile(t, filepath.Join(a, "backoff-rate-limited", "herd.svg"))
	if !bytes.Equal(herd, readFile(t, filepath.Join(b, "backoff-rate-limited", "herd.svg"))) {
		t.Fatal("same seed, different herd.svg")
	}
	for _, want := range []string{"exponential", "full-jitter", "per 10ms bin", "time since start (s)", "seed 1",
		"rlsim backoff --model rate-limited --clients 200 --runs 2 --limit 20 --strategies exponential,full-jitter --seed 1"} {
		if !bytes.Contains(herd, []byte(want)) {
			t.Errorf("herd.svg lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(a, "backoff-rate-limited", "backoff.svg")); err == nil {
		t.Error("one client count drew a chart against clients")
	}

	sweep := []string{"--clients", "10,20,30", "--runs", "3", "--strategies", "exponential,full-jitter"}
	c, d := run(sweep...), run(sweep...)
	for _, name := range []string{"backoff.svg", "herd.svg"} {
		got := readFile(t, filepath.Join(c, "backoff-occ", name))
		if !bytes.Equal(got, readFile(t, filepath.Join(d, "backoff-occ", name))) {
			t.Errorf("same seed, different %s", name)
		}
		if name == "backoff.svg" && (!bytes.Contains(got, []byte("total calls")) || !bytes.Contains(got, []byte("completion (s)"))) {
			t.Errorf("backoff.svg lacks its two panels")
		}
	}
}

func TestBackoffChartsOff(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"--charts", "none", "--out", dir}, {"--charts", "svg", "--out", ""}} {
		_, errOut, code := rlsim(t, append([]string{"backoff", "--clients", "5,10", "--runs", "1"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("--charts none wrote %d files", len(entries))
	}
	_, errOut, code := rlsim(t, "backoff", "--charts", "gif")
	if code != 2 || !strings.Contains(errOut, "--charts") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestRetryStormFolderHasTheHerd: a scenario with retrying clients gets its herd chart
// in the results folder, embedded in index.html.
func TestRetryStormFolderHasTheHerd(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := rlsim(t, "compare", "--scenario", "testdata/small-storm.yaml", "--charts", "svg", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	herd := readFile(t, filepath.Join(dir, "small-storm", "herd.svg"))
	index := readFile(t, filepath.Join(dir, "index.html"))
	summary := readFile(t, filepath.Join(dir, "small-storm", "summary.md"))
	if !bytes.Contains(herd, []byte("exponential")) || !bytes.Contains(index, []byte("small-storm/herd.svg")) || !bytes.Contains(summary, []byte("herd.svg")) {
		t.Fatalf("herd chart missing or not linked")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKeyingChartInFolderAndIndex: a scenario with attackers gets its legit-vs-attacker
// chart in its folder and on the index page; one without attackers or layers does not.
func TestKeyingChartInFolderAndIndex(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := rlsim(t, "compare", "--scenario", "ip-rotation", "--scenario", "login-attack", "--scenario", "token-burst",
		"--algorithms", "sliding-window,gcra", "--charts", "svg", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	index := readFile(t, filepath.Join(dir, "index.html"))
	for _, sc := range []string{"ip-rotation", "login-attack"} {
		svg := readFile(t, filepath.Join(dir, sc, "keying.svg"))
		if !bytes.Contains(svg, []byte("attacker admitted")) || !bytes.Contains(index, []byte(sc+"/keying.svg")) {
			t.Errorf("%s: keying chart missing from its folder or the index", sc)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "token-burst", "keying.svg")); err == nil {
		t.Error("token-burst has no attackers and no layers, yet got a keying chart")
	}
	// ip-rotation's compare_keys run the same traffic keyed by ip: the chart sets the
	// keys side by side, and the same seed draws the same bytes.
	svg := readFile(t, filepath.Join(dir, "ip-rotation", "keying.svg"))
	if !bytes.Contains(svg, []byte("per key and algorithm")) || !bytes.Contains(svg, []byte("--key ip")) {
		t.Error("ip-rotation's keying chart does not compare its keys")
	}
	again := t.TempDir()
	if _, errOut, code := rlsim(t, "compare", "--scenario", "ip-rotation", "--algorithms", "sliding-window,gcra", "--charts", "svg", "--out", again); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !bytes.Equal(svg, readFile(t, filepath.Join(again, "ip-rotation", "keying.svg"))) {
		t.Error("same seed, different keying.svg")
	}
	// A key chosen by the user replaces the comparison: one panel of algorithms.
	chosen := t.TempDir()
	if _, errOut, code := rlsim(t, "compare", "--scenario", "ip-rotation", "--algorithms", "gcra", "--key", "ip", "--charts", "svg", "--out", chosen); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := readFile(t, filepath.Join(chosen, "ip-rotation", "keying.svg")); !bytes.Contains(got, []byte("per algorithm")) || bytes.Contains(got, []byte("per key")) {
		t.Error("with --key the chart should compare algorithms only")
	}
}

// TestBackoffChartsUnwritableOut: a folder that cannot be written is one error line, and
// nothing goes to stdout.
func TestBackoffChartsUnwritableOut(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := rlsim(t, "backoff", "--clients", "5", "--runs", "1", "--charts", "svg", "--out", blocker)
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "rlsim: ") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
