package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlsim/rlsim/internal/testnet"
	"github.com/rlsim/rlsim/scenarios"
)

// realRedisClient connects to RLSIM_REDIS_URL, or skips the test.
func realRedisClient(t *testing.T) (string, *redis.Client) {
	t.Helper()
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return url, c
}

// keysUnder counts the keys under prefix (SCAN, as rlsim does).
func keysUnder(t *testing.T, c *redis.Client, prefix string) int {
	t.Helper()
	n := 0
	iter := c.Scan(context.Background(), 0, prefix+"*", 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// interruptInProcess runs rlsim in this process, sends this process sig once keysAt
// says the run has written keys, and returns what rlsim printed and its exit status.
// The test holds the signal too, so that a signal arriving after the run has let go of
// it cannot end the test binary.
func interruptInProcess(t *testing.T, sig syscall.Signal, started func() bool, args ...string) (string, string, int) {
	t.Helper()
	hold := make(chan os.Signal, 4)
	signal.Notify(hold, sig)
	defer signal.Stop(hold)
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		var out, errb strings.Builder
		code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		done <- result{out.String(), errb.String(), code}
	}()
	if !waitFor(60*time.Second, started) {
		t.Fatal("the run never started writing")
	}
	raise(t, sig)
	select {
	case r := <-done:
		return r.out, r.errOut, r.code
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not stop on %s", sig)
	}
	return "", "", 0
}

// rlsim memory interrupted while it loads a million keys on a real server: it stops
// between two round trips, deletes every key it wrote, says so in one line and exits
// 130.
func TestInterruptedMemoryDeletesItsKeys(t *testing.T) {
	url, c := realRedisClient(t)
	prefix := fmt.Sprintf("rlsim-test-interrupt:%d:", time.Now().UnixNano())
	out, errOut, code := interruptInProcess(t, syscall.SIGINT, func() bool { return keysUnder(t, c, prefix) > 1000 },
		"memory", "--redis", url, "--prefix", prefix, "--keys", "1000000", "--load", "1000000", "--algorithms", "fixed-window,sliding-window", "--out", "")
	want := regexp.MustCompile(`^rlsim: interrupted by SIGINT; deleted the \d+ keys it had written under "` + regexp.QuoteMeta(prefix) + `"\n$`)
	if code != 130 || out != "" || !want.MatchString(errOut) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Log(strings.TrimSpace(errOut))
	if n := keysUnder(t, c, prefix); n != 0 {
		t.Fatalf("%d keys left under %s", n, prefix)
	}
}

// nonatomicOnPrefix writes the built-in cluster-nonatomic under dir with its store keys
// under a prefix of the test's own, so that runs on a shared server never meet, and
// returns the file and the prefix.
func nonatomicOnPrefix(t *testing.T, dir string) (file, prefix string) {
	t.Helper()
	src, err := scenarios.FS.ReadFile("cluster-nonatomic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prefix = fmt.Sprintf("rlsim-test-%d:", time.Now().UnixNano())
	yaml := strings.Replace(string(src), "\ncluster:\n", "\ncluster:\n  prefix: \""+prefix+"\"\n", 1)
	if yaml == string(src) {
		t.Fatal("cluster-nonatomic.yaml has no cluster section to put a prefix in")
	}
	file = filepath.Join(dir, "cluster-nonatomic.yaml")
	writeFile(t, file, yaml)
	return file, prefix
}

// storeForTest is the Redis server a test interrupts runs on: RLSIM_REDIS_URL when set,
// else a miniredis of its own; keys counts the keys under a prefix, and of them the ones
// without a TTL.
func storeForTest(t *testing.T) (url string, keys func(prefix string) (all, noTTL int)) {
	t.Helper()
	if os.Getenv("RLSIM_REDIS_URL") != "" {
		url, c := realRedisClient(t)
		return url, func(prefix string) (all, noTTL int) {
			ctx := context.Background()
			iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				all++
				if c.PTTL(ctx, iter.Val()).Val() == -1 {
					noTTL++
				}
			}
			return all, noTTL
		}
	}
	m := testnet.Miniredis(t)
	return "redis://" + m.Addr(), func(prefix string) (all, noTTL int) {
		for _, k := range m.Keys() {
			if strings.HasPrefix(k, prefix) {
				all++
				if m.TTL(k) == 0 {
					noTTL++
				}
			}
		}
		return all, noTTL
	}
}

// Ctrl-C (and SIGTERM) in the middle of `rlsim run cluster-nonatomic --redis`, run in
// this process: the run stops, deletes every key it wrote — counters a crash left without
// a TTL included — writes no file, says so in one line and exits 128 + the signal.
func TestInterruptedFleetRunCleansUp(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(signalName(sig), func(t *testing.T) {
			url, keys := storeForTest(t)
			dir := t.TempDir()
			file, prefix := nonatomicOnPrefix(t, dir)
			decisions := filepath.Join(dir, "decisions.csv")
			// Interrupted once a crash between INCR and EXPIRE has left a counter without a
			// TTL, which nothing but the run's cleanup would ever delete.
			out, errOut, code := interruptInProcess(t, sig, func() bool { _, noTTL := keys(prefix); return noTTL > 0 },
				"run", file, "--redis", url, "--pipeline", "1", "--decisions", decisions, "--out", filepath.Join(dir, "out"))
			want := regexp.MustCompile(`^rlsim: interrupted by ` + signalName(sig) + `; deleted the \d+ keys it had written on the Redis server ` +
				`\(under "` + regexp.QuoteMeta(prefix) + `cluster-nonatomic:"\); ` + regexp.QuoteMeta(decisions) + ` not written\n$`)
			if code != 128+int(sig) || out != "" || !want.MatchString(errOut) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			t.Log(strings.TrimSpace(errOut))
			if n, _ := keys(prefix); n != 0 {
				t.Errorf("%d keys left under %s", n, prefix)
			}
			if got := names(t, dir); !slices.Equal(got, []string{"cluster-nonatomic.yaml"}) {
				t.Errorf("the folder holds %v", got)
			}
		})
	}
}

// A fleet that writes 200000 keys on a real Redis (RLSIM_REDIS_URL) completes: the audit
// reads them in pipelined SCAN steps, each round trip with its own deadline, the run
// deletes every one, and the store line reports the time spent on them apart from the
// decisions' rate.
func TestFleetOf200kKeysOnRealRedis(t *testing.T) {
	url, c := realRedisClient(t)
	prefix := fmt.Sprintf("rlsim-test-%d:", time.Now().UnixNano())
	file := filepath.Join(t.TempDir(), "fleet-200k.yaml")
	writeFile(t, file, `name: fleet-200k
description: 200000 fresh addresses, each its own key, on a shared store
seed: 1
duration: 10s
policy: {limit: 10, window: 1m}
algorithms: [fixed-window]
key: ip
cluster:
  prefix: "`+prefix+`"
  placement: shared
  nodes: 4
traffic:
  - ipv6-rotation: {rate: 20000, prefix: "2001:db8:bad:1::/64", user: rotator}
`)
	out, errOut, code := rlsim(t, "run", file, "--redis", url, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Results []struct {
			Keys        int64 `json:"keys"`
			Distributed struct {
				BlockedForever int64 `json:"blocked_forever"`
				LeakedKeys     int64 `json:"leaked_keys"`
			} `json:"distributed"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Results) != 1 {
		t.Fatalf("%v: %.200s", err, out)
	}
	r := rep.Results[0]
	if r.Keys < 200_000 || r.Distributed.BlockedForever != 0 || r.Distributed.LeakedKeys != 0 {
		t.Errorf("%+v", r)
	}
	line := regexp.MustCompile(`^rlsim: store: \d+ script decisions in \d+ round trips \(pipeline 256\) over [0-9.]+s of wall time: \d+ decisions/s; then [0-9.]+s to audit the keys left and delete the (\d+) written\n$`)
	m := line.FindStringSubmatch(withoutWaits(errOut))
	if m == nil || m[1] != fmt.Sprint(r.Keys) {
		t.Errorf("stderr %q: want the store line, %d keys deleted", errOut, r.Keys)
	}
	t.Log(strings.TrimSpace(errOut))
	if n := keysUnder(t, c, prefix); n != 0 {
		t.Errorf("%d keys left under %s", n, prefix)
	}
}

// rlsim backoff stopped by Ctrl-C between two of its runs: one line, exit 130, and the
// --series file it would have written is not written.
func TestInterruptedBackoffStops(t *testing.T) {
	series := filepath.Join(t.TempDir(), "series.csv")
	start := time.Now()
	out, errOut, code := interruptInProcess(t, syscall.SIGINT, func() bool { return time.Since(start) > 300*time.Millisecond },
		"backoff", "--runs", "100000", "--clients", "1000", "--series", series, "--charts", "none")
	if code != 130 || out != "" || errOut != "rlsim: interrupted by SIGINT; nothing to clean up, nothing written\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(series); !os.IsNotExist(err) {
		t.Errorf("%s written", series)
	}
}

// rlsim worst-case stopped by Ctrl-C in the middle of a search: one line at once, exit
// 130, no file.
func TestInterruptedWorstCaseStops(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	out, errOut, code := interruptInProcess(t, syscall.SIGINT, func() bool { return time.Since(start) > 300*time.Millisecond },
		"worst-case", "--algorithms", "gcra", "--budget", "20000", "--charts", "svg", "--out", dir)
	if code != 130 || out != "" || errOut != "rlsim: interrupted by SIGINT; nothing to clean up, nothing written\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopped %s after it started", d)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written: %v", entries)
	}
}
