package cmd

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/internal/testnet"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/store"
)

// --redis puts a cluster scenario's store on a real server: same JSON as the model, one
// by one and pipelined, the decisions/s line on stderr, nothing left behind.
func TestRunOnRedisFlag(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set: no real Redis to run against")
	}
	want, _, code := rlsim(t, "run", "cluster-outage", "--format", "json")
	if code != 0 {
		t.Fatal("model run failed")
	}
	for _, pipeline := range []string{"1", "64"} {
		out, errOut, code := rlsim(t, "run", "cluster-outage", "--format", "json", "--redis", url, "--pipeline", pipeline)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !regexp.MustCompile(`^rlsim: store: \d+ script decisions in \d+ round trips \(pipeline ` + pipeline + `\) over [0-9.]+s of wall time: \d+ decisions/s; ` +
			`then [0-9.]+s to audit the keys left and delete the \d+ written\n$`).MatchString(errOut) {
			t.Fatalf("stderr %q", errOut)
		}
		if strings.ReplaceAll(out, `"store": "redis"`, `"store": "model"`) != want {
			t.Fatalf("pipeline %s: the report on Redis differs from the model's", pipeline)
		}
	}
	r, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if left, err := r.Keys("rlsim:cluster-outage:"); err != nil || len(left) != 0 {
		t.Fatalf("the runs left %d keys (%v)", len(left), err)
	}
}

func TestStoreFlagsBadInput(t *testing.T) {
	down := "redis://" + testnet.RefusedAddr(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "cluster-shared", "--pipeline", "0"}, 2, "--pipeline: must be between 1 and 10000, got 0"},
		{[]string{"run", "cluster-shared", "--pipeline", "10001"}, 2, "--pipeline: must be between 1 and 10000, got 10001"},
		{[]string{"run", "cluster-shared", "--redis", "http://nope"}, 2, `for "--redis" flag: scheme "http" is not redis, rediss or unix`},
		{[]string{"run", "cluster-shared", "--redis", down}, 1, "--redis: store unavailable"},
	} {
		out, errOut, code := rlsim(t, tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
}

// --redis on a scenario without a cluster section is a usage error (checked before any
// connection is needed: a miniredis stands in for the server).
func TestRedisFlagNeedsACluster(t *testing.T) {
	mini, err := store.NewMiniredis()
	if err != nil {
		t.Fatal(err)
	}
	defer mini.Close()
	url := "redis://" + mini.Client().Options().Addr
	out, errOut, code := rlsim(t, "run", "boundary-burst", "--redis", url)
	if code != 2 || out != "" || !strings.Contains(errOut, "--redis: none of the scenarios has a cluster section") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// A run on an embedded miniredis prints the decisions/s line too; pipelined or not, the
// report is the same.
func TestStoreLineOnMiniredis(t *testing.T) {
	file := t.TempDir() + "/mini.yaml"
	os.WriteFile(file, []byte(`name: mini
duration: 20s
policy: {limit: 10, window: 5s}
algorithms: [gcra]
cluster: {nodes: 3, placement: shared, store: miniredis}
traffic:
  - script:
      - {at: 0s, count: 200, key: u, spread: 20s}
`), 0o644)
	var reports []string
	for _, pipeline := range []string{"1", "32"} {
		out, errOut, code := rlsim(t, "run", file, "--format", "json", "--pipeline", pipeline)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		trips := map[string]string{"1": "200", "32": "7"}[pipeline]
		if !regexp.MustCompile(`^rlsim: store: 200 script decisions in ` + trips + ` round trips \(pipeline ` + pipeline + `\) over [0-9.]+s of wall time: \d+ decisions/s\n$`).MatchString(errOut) {
			t.Fatalf("stderr %q", errOut)
		}
		reports = append(reports, out)
	}
	if reports[0] != reports[1] {
		t.Fatal("the pipelined report differs")
	}
}

// The decisions/s line divides by the time spent deciding: the time the runs then spend
// on their keys (the audit, the deletion) is reported after it, apart.
func TestStoreLineLeavesTheAuditOut(t *testing.T) {
	clock := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	m := storeMeter{now: func() time.Time { return clock }}
	m.run(func(s *run.StoreStats) error {
		s.ScriptCalls, s.RoundTrips = 1000, 4
		s.Prefixes = []string{"rlsim:big:"}
		s.Deleted = 200000
		clock = clock.Add(2 * time.Second) // deciding
		s.AuditTime = 3 * time.Second
		clock = clock.Add(s.AuditTime) // auditing and deleting, timed by the run on m's clock
		return nil
	})
	var b strings.Builder
	m.report(&b, 256)
	want := "rlsim: store: 1000 script decisions in 4 round trips (pipeline 256) over 2.00s of wall time: 500 decisions/s; then 3.00s to audit the keys left and delete the 200000 written\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}
