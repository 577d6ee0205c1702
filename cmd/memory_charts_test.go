package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rlsim memory draws in-process beside Redis bytes per key, the Redis bars labelled
// model, into OUT/memory; the same flags give the same bytes.
func TestMemoryChart(t *testing.T) {
	draw := func(args ...string) map[string][]byte {
		dir := t.TempDir()
		_, errOut, code := rlsim(t, append([]string{"memory", "--keys", "1000", "--out", dir}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return readTree(t, dir)
	}
	a, b := draw("--charts", "png,svg"), draw("--charts", "png,svg")
	svg := a["memory/memory.svg"]
	if !bytes.Equal(svg, b["memory/memory.svg"]) || !bytes.Equal(a["memory/memory.png"], b["memory/memory.png"]) {
		t.Error("the memory chart differs between two identical runs")
	}
	if !bytes.HasPrefix(a["memory/memory.png"], []byte("\x89PNG")) {
		t.Error("memory.png is not a PNG")
	}
	for _, want := range []string{"in-process", "Redis (model)", "Redis bytes: model (calibrated on Redis 7.0.15)", "sliding log 20.8× two counters",
		"rlsim memory --keys 1000 --limit 100", "3656", "2096", "176"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("memory.svg lacks %q", want)
		}
	}
	if c := draw("--charts", "svg", "--limit", "200"); bytes.Equal(c["memory/memory.svg"], svg) {
		t.Error("--limit does not reach the chart")
	}
	if files := draw("--charts", "none"); len(files) != 0 {
		t.Errorf("--charts none wrote %d files", len(files))
	}
}

func TestMemoryChartBadFlagsWriteNothing(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := rlsim(t, "memory", "--charts", "gif", "--out", dir)
	if code != 2 || !strings.Contains(errOut, "--charts") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused run wrote %d entries", len(entries))
	}
	// An --out that cannot be a folder is one error line, and nothing on stdout.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := rlsim(t, "memory", "--keys", "10", "--charts", "svg", "--out", file)
	if code != 1 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// On a real server the Redis bars say measured.
func TestMemoryChartMeasured(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	dir := t.TempDir()
	_, errOut, code := rlsim(t, "memory", "--keys", "200", "--limit", "10", "--algorithms", "sliding-log,sliding-window",
		"--redis", url, "--prefix", "rlsim-test-memory-chart:", "--charts", "svg", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	svg := string(readTree(t, dir)["memory/memory.svg"])
	for _, want := range []string{"Redis (measured)", "Redis bytes: MEMORY USAGE on Redis 7", "--algorithms sliding-log,sliding-window --redis URL"} {
		if !strings.Contains(svg, want) {
			t.Errorf("memory.svg lacks %q", want)
		}
	}
}

// A scenario's memory chart draws the store model's Redis bytes beside in-process, at the
// scenario's limit (boundary-burst: 100, where a sorted set of 100 entries takes 3656 B).
func TestScenarioMemoryChartHasRedisModel(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := rlsim(t, "run", "boundary-burst", "--charts", "svg", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	svg := string(readTree(t, dir)["boundary-burst/memory.svg"])
	for _, want := range []string{"in-process", "Redis (model, a client at its limit)", ">3656<", ">176<", ">2096<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("memory.svg lacks %q", want)
		}
	}
}
