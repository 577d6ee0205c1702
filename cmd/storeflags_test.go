package cmd

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/internal/testnet"
	"github.com/rlsim/rlsim/store"
)

// stallingProxy forwards connections to target until its clients have sent it after
// bytes, then stalls as an overloaded server does: every connection stays open and nothing
// more goes either way.
func stallingProxy(t *testing.T, target string, after int64) string {
	t.Helper()
	ln := testnet.Listen(t)
	var mu sync.Mutex
	var conns []net.Conn
	var sent int64
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { _, _ = io.Copy(c, up) }()
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						mu.Lock()
						sent += int64(n)
						stalled := sent > after
						mu.Unlock()
						if stalled {
							return // hold the connection, forward nothing more
						}
						if _, err := up.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// pausingProxy forwards connections to target and, once its clients have sent it after
// bytes, holds what they send on every connection for pause, once, as a server starved of
// CPU does, then forwards again: slow, not dead. Holding only the connection that crossed
// the mark left a run's other connections answered while it had batches for them to
// carry, eight batches on their way, so the store was never silent for long.
func pausingProxy(t *testing.T, target string, after int64, pause time.Duration) string {
	t.Helper()
	ln := testnet.Listen(t)
	var mu sync.Mutex
	var conns []net.Conn
	var sent int64
	var until time.Time // the pause's end; zero: not paused yet
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { _, _ = io.Copy(c, up) }()
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						mu.Lock()
						sent += int64(n)
						if sent > after && until.IsZero() {
							until = time.Now().Add(pause)
						}
						wait := time.Until(until)
						mu.Unlock()
						if wait > 0 {
							time.Sleep(wait)
						}
						if _, err := up.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A store that pauses for 3 s in the middle of a run (a server starved of CPU) fails the
// run at a 2.5 s --store-timeout, and with a longer one the run waits, says the store is
// slow, and completes with the report of the same run on a store that never paused.
func TestPausedStoreCompletesWithALongerTimeout(t *testing.T) {
	t.Parallel() // it waits on a server of its own, mostly asleep
	// Each run on a server of its own: a run that failed may leave keys behind.
	mr := testnet.Miniredis(t)
	file := filepath.Join(t.TempDir(), "shared.yaml")
	writeFile(t, file, `name: shared-small
description: a shared store for three nodes, 40 keys
seed: 1
duration: 20s
policy: {limit: 10, window: 5s}
algorithms: [fixed-window, token-bucket]
key: user
cluster:
  placement: shared
  nodes: 3
traffic:
  - poisson: {rate: 300, keys: 40, key_prefix: user_, end: 20s}
`)
	args := []string{"run", file, "--format", "json"}
	want, errOut, code := rlsim(t, append(args, "--redis", "redis://"+mr.Addr())...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out, errOut, code := rlsim(t, append(args, "--redis", "redis://"+pausingProxy(t, testnet.Miniredis(t).Addr(), 20_000, 3*time.Second), "--store-timeout", "2500ms")...)
	if code != 1 || out != "" || !strings.Contains(errOut, "no reply within 2.5s, the store's timeout") {
		t.Fatalf("a 3s pause at --store-timeout 2.5s: exit %d, stderr %q", code, errOut)
	}
	addr := pausingProxy(t, testnet.Miniredis(t).Addr(), 20_000, 3*time.Second)
	out, errOut, code = rlsim(t, append(args, "--redis", "redis://"+addr, "--store-timeout", "30s")...)
	if code != 0 {
		t.Fatalf("a 3s pause at --store-timeout 30s: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "rlsim: store: redis at "+addr+" has sent no reply for ") || !strings.Contains(errOut, "waiting up to --store-timeout 30s") ||
		!strings.Contains(errOut, "answered again after") {
		t.Errorf("stderr does not say the store was slow:\n%s", errOut)
	}
	if out != want {
		t.Errorf("the report after the pause differs from the run without one:\n%.300s\nwant:\n%.300s", out, want)
	}
}

// Every malformed value of --redis and --store-timeout is a bad command line, on every
// command that takes them: exit 2 and one line naming the flag. An empty --redis used to
// run the embedded store without a word.
func TestStoreFlagsRefuseBadValues(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log.jsonl")
	os.WriteFile(log, []byte(`{"t":"2026-01-01T10:00:00Z","key":"a"}`+"\n"), 0o644)
	lua := filepath.Join("..", "examples", "lua", "fixed_window.lua")
	commands := [][]string{
		{"compare", "--scenario", "boundary-burst"},
		{"run", "cluster-shared"},
		{"replay", log, "--log-format", "jsonl", "--lua", lua},
		{"worst-case", "--lua", lua},
		{"memory"},
		{"claims", "--claim", "status-429"},
	}
	for _, cmd := range commands {
		for _, bad := range [][]string{
			{"--redis", ""}, {"--redis", "http://127.0.0.1:6379"}, {"--redis", "redis://127.0.0.1:99999"},
			{"--redis", "127.0.0.1:6379"}, {"--store-timeout", "0s"}, {"--store-timeout", "soon"},
			{"--store-timeout", "2h"},
		} {
			if cmd[0] == "claims" && bad[0] == "--store-timeout" && bad[1] == "soon" {
				continue
			}
			args := append(append([]string{}, cmd...), bad...)
			out, errOut, code := rlsim(t, args...)
			if code != 2 || out != "" || !strings.Contains(errOut, bad[0]) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
	}
	_, errOut, _ := rlsim(t, "memory", "--redis", "redis://:hunter2@127.0.0.1:99999")
	if strings.Contains(errOut, "hunter2") {
		t.Errorf("the error shows the password: %q", errOut)
	}
	_, errOut, _ = rlsim(t, "memory", "--redis", "")
	if !strings.Contains(errOut, "an empty URL names no server") {
		t.Errorf("--redis '': %q", errOut)
	}
}

// A store that stalls is reported as slow while the run waits — how long it has sent
// nothing, against the --store-timeout it is given — and, once that passes, the run fails
// with no reply within that timeout (exit 1), not as a store that is down.
func TestStalledStoreIsSlowThenTimesOut(t *testing.T) {
	t.Parallel() // it waits on a server of its own, mostly asleep
	mr := testnet.Miniredis(t)
	addr := stallingProxy(t, mr.Addr(), 60_000)
	start := time.Now()
	out, errOut, code := rlsim(t, "run", "cluster-shared", "--redis", "redis://"+addr, "--store-timeout", "2500ms", "--pipeline", "1")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, want := range []string{
		"rlsim: store: redis at " + addr + " has sent no reply for 1", "waiting up to --store-timeout 2.5s",
		"no reply within 2.5s, the store's timeout", "--store-timeout",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "store unavailable") {
		t.Errorf("a stalled store is reported as unavailable:\n%s", errOut)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %s", d)
	}
}

// storeWatch on a clock of its own: silent past a second with calls on their way, it says
// so at 1 s, 2 s and 4 s, not in between; once a reply comes, that the store answered
// again; never while nothing is on its way.
func TestStoreWatchReportsSilence(t *testing.T) {
	var b bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &storeWatch{watch: &store.Watch{}, timeout: 30 * time.Second, w: &b, now: func() time.Time { return now }}
	w.since = now
	step := func(d time.Duration) {
		now = now.Add(d)
		w.check()
	}
	step(3 * time.Second) // idle: nothing on its way
	if b.Len() != 0 {
		t.Fatalf("an idle store is reported: %q", b.String())
	}
	end := w.watch.Begin()
	for range 20 {
		step(250 * time.Millisecond) // 5 s of silence
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "no reply for 1s") || !strings.Contains(lines[1], "no reply for 2s") || !strings.Contains(lines[2], "no reply for 4s") {
		t.Fatalf("lines %q, want 1 s, 2 s and 4 s", lines)
	}
	if !strings.Contains(lines[0], "with a round trip on its way; waiting up to --store-timeout 30s") {
		t.Errorf("line %q", lines[0])
	}
	end()
	step(250 * time.Millisecond)
	if !strings.Contains(b.String(), "answered again after 5.3s") {
		t.Errorf("no line for the reply: %q", b.String())
	}
}

// rlsim memory on a server that stalls in the middle of loading: it fails after
// --store-timeout, and says how many of the keys it wrote it could not delete, under
// which prefix, and the redis-cli line that deletes them on that server.
func TestMemoryStalledSaysWhatItLeft(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set: no real Redis to run against")
	}
	opt, err := store.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	real, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	prefix := fmt.Sprintf("rlsim-left-test:%d:", time.Now().UnixNano())
	defer real.DeleteUnder(prefix)
	addr := stallingProxy(t, opt.Addr, 150_000)
	out, errOut, code := rlsim(t, "memory", "--redis", fmt.Sprintf("redis://%s/%d", addr, opt.DB), "--prefix", prefix,
		"--algorithms", "fixed-window", "--keys", "5000", "--load", "5000", "--store-timeout", "1s")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	m := regexp.MustCompile(`up to (\d+) keys it wrote under "` + regexp.QuoteMeta(prefix) + `" are left on the server`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("stderr does not say how many keys are left: %q", errOut)
	}
	t.Log(errOut)
	left, _ := strconv.Atoi(m[1])
	keys, err := real.Keys(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 || len(keys) > left {
		t.Errorf("the server holds %d keys under the prefix; the message says up to %d", len(keys), left)
	}
	host, port, _ := net.SplitHostPort(addr)
	if want := "delete them with: redis-cli -h " + host + " -p " + port; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q: %q", want, errOut)
	}
}

// withoutWaits is stderr without the lines of a store that was slow for a while (a busy
// machine makes them), which a test of the other lines must not count.
func withoutWaits(errOut string) string {
	var keep []string
	for _, l := range strings.SplitAfter(errOut, "\n") {
		if !strings.Contains(l, "has sent no reply for") && !strings.Contains(l, "answered again after") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}
