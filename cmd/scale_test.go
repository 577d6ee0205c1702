package cmd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

// A heavy scenario reports its memory without being asked; --memory asks for it anywhere.
func TestMemorySection(t *testing.T) {
	dir := t.TempDir()
	heavy := filepath.Join(dir, "big.yaml")
	err := os.WriteFile(heavy, []byte(`name: big
description: many keys
heavy: true
duration: 10s
policy: {limit: 10, window: 1s}
traffic:
  - poisson: {rate: 500, keys: 2000, key_prefix: u, popularity: zipf}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	light := filepath.Join(dir, "light.yaml")
	if err := os.WriteFile(light, []byte("name: light\nduration: 10s\npolicy: {limit: 5, window: 1s}\ntraffic:\n  - poisson: {rate: 100, keys: 50}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", heavy}, {"run", light, "--memory"}} {
		out, errOut, code := rlsim(t, append(args, "--format", "json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var rep struct {
			Memory *struct {
				Keys        int `json:"keys"`
				BytesPerKey struct {
					AlgorithmState float64 `json:"algorithm_state"`
					Reference      float64 `json:"reference"`
					InternedKeys   float64 `json:"interned_keys"`
					Total          float64 `json:"total"`
				} `json:"bytes_per_key"`
				Bytes int64 `json:"bytes"`
			} `json:"memory"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		m := rep.Memory
		if m == nil || m.Keys == 0 || m.BytesPerKey.AlgorithmState <= 0 || m.BytesPerKey.Reference <= 0 ||
			math.Abs(m.BytesPerKey.Total-(m.BytesPerKey.AlgorithmState+m.BytesPerKey.Reference+m.BytesPerKey.InternedKeys)) > 1e-6 ||
			int64(m.BytesPerKey.Total*float64(m.Keys)+0.5) != m.Bytes {
			t.Fatalf("%v: memory section %+v", args, m)
		}
		table, _, _ := rlsim(t, args...)
		if !strings.Contains(table, "memory: ") {
			t.Errorf("%v: table has no memory line", args)
		}
	}
	out, _, _ := rlsim(t, "run", light, "--format", "json")
	if strings.Contains(out, `"memory"`) {
		t.Error("memory section printed without --memory")
	}
}

// A scenario of a billion decisions or more (requests times algorithms) is refused
// without --yes, in one line that gives the estimate, exit 2, nothing written; a run
// just under it runs unasked.
func TestABillionDecisionsWantYes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, count int64) string {
		path := filepath.Join(dir, name+".yaml")
		body := fmt.Sprintf("name: %s\npolicy: {limit: 10, window: 1m}\ntraffic:\n  - script:\n      - {at: 0s, count: %d, key: u, spread: 1h}\n", name, count)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	billion := write("billion", confirmDecisions)
	decisions := filepath.Join(dir, "d.csv")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", billion, "--decisions", decisions},
			"rlsim: scenario billion sends about 1e+09 requests to each of 6 algorithms, 6e+09 decisions, a billion or more: a run of hours and of memory to match; add --yes to run it\n"},
		{[]string{"compare", "--scenario", billion, "--algorithms", "gcra", "--decisions", decisions},
			"rlsim: scenario billion sends about 1e+09 requests, a billion or more: a run of hours and of memory to match; add --yes to run it\n"},
	} {
		out, errOut, code := rlsim(t, tt.args...)
		if code != 2 || out != "" || errOut != tt.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q\nwant %q", tt.args, code, out, errOut, tt.want)
		}
		if _, err := os.Stat(decisions); !os.IsNotExist(err) {
			t.Errorf("%v: %s written before the run was confirmed", tt.args, decisions)
		}
	}

	sc, err := scenario.Load(billion)
	if err != nil {
		t.Fatal(err)
	}
	if err := confirmSize(sc, []string{"gcra"}, true); err != nil {
		t.Errorf("with --yes: %v", err)
	}
	below, err := scenario.Load(write("below", confirmDecisions/2-1))
	if err != nil {
		t.Fatal(err)
	}
	if err := confirmSize(below, []string{"gcra", "fixed-window"}, false); err != nil {
		t.Errorf("just under a billion decisions: %v", err)
	}
	if err := confirmSize(below, []string{"gcra", "fixed-window", "sliding-log"}, false); err == nil {
		t.Error("1.5 billion decisions ran unasked")
	}
	// A billion closed-loop clients are asked about too, before anything runs.
	clients := filepath.Join(dir, "clients.yaml")
	if err := os.WriteFile(clients, []byte("name: clients\npolicy: {limit: 10, window: 1m}\nclients: {count: 1000000, requests: 100, strategies: [exponential, full-jitter], runs: 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := rlsim(t, "compare", "--scenario", clients, "--algorithms", "gcra")
	if want := "rlsim: scenario clients sends about 1e+09 requests, a billion or more: a run of hours and of memory to match; add --yes to run it\n"; code != 2 || out != "" || errOut != want {
		t.Errorf("a billion closed-loop requests: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// A heavy scenario's state is collected as soon as its run returns, before anything is
// rendered; a light one is left to the collector's own pace.
func TestCollectAfterHeavy(t *testing.T) {
	gcs := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	runtime.GC() // nothing is due for a while after a collection
	before := gcs()
	collectAfterHeavy(&scenario.Scenario{Name: "light"})
	if gcs() != before {
		t.Error("a collection after a light scenario")
	}
	collectAfterHeavy(&scenario.Scenario{Name: "big", Heavy: true})
	if gcs() == before {
		t.Error("no collection after a heavy scenario")
	}
}
