package external

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// pythonExample is the command running an example program of examples/exec, or a skip
// when python3 is missing.
func pythonExample(t *testing.T, name string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	p, err := filepath.Abs(filepath.Join("..", "examples", "exec", name))
	if err != nil {
		t.Fatal(err)
	}
	return "python3 " + p
}

type testRequest struct {
	key       uint32
	now, cost int64
}

// mixedRequests are n requests on a few keys, mostly in time order with some stamped
// back, some costlier than the burst.
func mixedRequests(n int, seed uint64, window time.Duration) []testRequest {
	rng := rand.New(rand.NewPCG(seed, 1))
	now := int64(1767261600) * int64(time.Second)
	out := make([]testRequest, n)
	for i := range out {
		now += rng.Int64N(int64(window) / 40)
		at := now
		if rng.IntN(20) == 0 {
			at -= rng.Int64N(int64(window) / 10)
		}
		cost := int64(1 + rng.IntN(3))
		if rng.IntN(50) == 0 {
			cost = 1000
		}
		out[i] = testRequest{key: uint32(rng.IntN(7)), now: at, cost: cost}
	}
	return out
}

// TestExecTokenBucketMatchesBuiltin: examples/exec/token_bucket.py admits and refuses,
// and gives the same retry-after, as the built-in token bucket, request for request,
// through requests written ahead of the answers.
func TestExecTokenBucketMatchesBuiltin(t *testing.T) {
	e, err := NewExec(pythonExample(t, "token_bucket.py"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Name() != "token_bucket" {
		t.Errorf("name %q, want token_bucket", e.Name())
	}
	for _, p := range []algorithms.Policy{
		{Limit: 10, Window: time.Second, Burst: 5},
		{Limit: 100, Window: time.Minute},
		{Limit: 7, Window: 3 * time.Second, Burst: 20},
	} {
		builtin, err := algorithms.New("token-bucket", p)
		if err != nil {
			t.Fatal(err)
		}
		l, err := e.New(p)
		if err != nil {
			t.Fatal(err)
		}
		lim := l.(Limiter)
		reqs := mixedRequests(5000, uint64(p.Limit), p.Window)
		var want []algorithms.Decision
		for _, r := range reqs {
			lim.SetName(r.key, "k"+strconv.Itoa(int(r.key)))
			lim.Send(r.key, r.now, r.cost)
			want = append(want, builtin.Allow(r.key, r.now, r.cost))
		}
		admitted := 0
		for i, w := range want {
			got := lim.Receive()
			if got.Allowed != w.Allowed || got.RetryAfter != w.RetryAfter {
				t.Fatalf("%+v request %d %+v: program %v retry %v, built-in %v retry %v", p, i+1, reqs[i], got.Allowed, got.RetryAfter, w.Allowed, w.RetryAfter)
			}
			if w.Allowed {
				admitted++
			}
		}
		if err := lim.Close(); err != nil {
			t.Fatal(err)
		}
		if admitted == 0 || admitted == len(reqs) {
			t.Fatalf("%+v: %d of %d admitted: the requests test nothing", p, admitted, len(reqs))
		}
	}
	if s := e.Stats(); s.Decisions != 15000 || s.Wall <= 0 {
		t.Errorf("stats %+v, want 15000 decisions in some wall time", s)
	}
}

// living lists the processes of group pgid that are not zombies.
func living(t *testing.T, pgid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to list processes in")
	}
	var out []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // not a process, or gone meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces, so split after its ')'.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			out = append(out, e.Name()+" "+s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return out
}

// waitGone checks, once a limiter is closed, that its child was waited for (it is no
// longer in /proc, not even as a zombie) and that every process of its group was killed
// (a killed grandchild, adopted by init, may linger as a zombie until init reaps it).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("child %d was not reaped", pid)
	}
	for range 100 {
		if len(living(t, pid)) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("processes of group %d outlived their limiter: %q", pid, living(t, pid))
}

// TestExecFailures: a program that dies, hangs or answers garbage is an error naming the
// program and the request, and on every path the child and whatever it started are
// killed and reaped.
func TestExecFailures(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Second}
	// Each program starts a grandchild in its group, which must go too.
	const bg = "sleep 300 & "
	cases := []struct {
		name, command string
		want          []string
		requests      int
	}{
		{"dies", bg + "read line; echo 'boom' >&2; exit 3", []string{"request 1 ", `key "alice"`, "exited (exit status 3) before answering, after 0 answers", `"boom"`}, 3},
		{"dies later", bg + `read a; echo '{"allowed":true}'; read b; exit 4`, []string{"request 2 ", "after 1 answers"}, 3},
		{"hangs", bg + "exec sleep 300", []string{"request 1 ", "no answer within 300ms"}, 3},
		{"garbage", bg + "while read l; do echo nope; done", []string{"request 1 ", `answered "nope", which is not a JSON object`}, 3},
		{"no allowed", bg + `while read l; do echo '{"ok":1}'; done`, []string{"request 1 ", `has no "allowed" field`}, 3},
		{"bad retry", bg + `while read l; do echo '{"allowed":false,"retry_after_ns":-5}'; done`, []string{"request 1 ", "retry_after_ns must be 0 or more"}, 3},
		{"extra answers", bg + `while read l; do echo '{"allowed":true}'; echo '{"allowed":true}'; done`, []string{"answered 3 more lines than the 3 requests"}, 3},
		{"bad exit", bg + `while read l; do echo '{"allowed":true}'; done; exit 9`, []string{"exit status 9 at the end of its input"}, 3},
		{"ignores EOF", bg + `trap '' TERM; while true; do read l && echo '{"allowed":true}'; done`, nil, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &Exec{SkipClockCheck: true, Command: c.command, Timeout: 300 * time.Millisecond, Grace: 200 * time.Millisecond, name: "x"}
			l, err := e.New(p)
			if err != nil {
				t.Fatal(err)
			}
			lim := l.(*execLimiter)
			pgid := lim.Pid()
			names := []string{"alice", "bob", "carol"}
			for i := range c.requests {
				lim.SetName(uint32(i), names[i])
				lim.Send(uint32(i), int64(i+1)*int64(time.Millisecond), 1)
			}
			for range c.requests {
				lim.Receive()
			}
			err = lim.Close()
			waitGone(t, pgid)
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one saying %q", c.want)
			}
			for _, w := range append(c.want, "limiter-exec '") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestExecChildrenEndOnEveryPath: children are ended when the Exec is closed with
// limiters never closed, idle ones waiting for reuse, and when it is interrupted mid-run.
func TestExecChildrenEndOnEveryPath(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Second}
	echo := `sleep 300 & while read l; do echo '{"allowed":true}'; done`

	t.Run("closed exec", func(t *testing.T) {
		e := &Exec{SkipClockCheck: true, Command: echo, Grace: 100 * time.Millisecond, name: "x"}
		open, _ := e.New(p)
		idle, _ := e.New(p)
		idle.Allow(0, 1, 1) // no key named: the child waits for the next limiter
		if err := idle.(Limiter).Close(); err != nil {
			t.Fatal(err)
		}
		again, _ := e.New(p) // the idle child, reused
		if again.(*execLimiter).Pid() != idle.(*execLimiter).Pid() {
			t.Error("an idle child of the same policy was not reused")
		}
		if d := again.Allow(0, 2, 1); !d.Allowed {
			t.Error("a reused child did not answer")
		}
		again.(Limiter).Close()
		e.Close()
		waitGone(t, open.(*execLimiter).Pid())
		waitGone(t, idle.(*execLimiter).Pid())
	})
	t.Run("interrupted", func(t *testing.T) {
		e := &Exec{SkipClockCheck: true, Command: "sleep 300 & read l; exec sleep 300", Timeout: 5 * time.Second, Grace: 100 * time.Millisecond, name: "x"}
		l, _ := e.New(p)
		lim := l.(*execLimiter)
		cause := errors.New("interrupted by test")
		go func() {
			time.Sleep(100 * time.Millisecond)
			e.Interrupt(cause)
		}()
		start := time.Now()
		lim.Allow(0, 1, 1)
		if !errors.Is(lim.Err(), cause) {
			t.Fatalf("error %v, want the interruption", lim.Err())
		}
		if time.Since(start) > 4*time.Second {
			t.Error("the interruption did not end the wait for an answer")
		}
		lim.Close()
		waitGone(t, lim.Pid())
		if _, err := e.New(p); !errors.Is(err, cause) {
			t.Errorf("New after an interruption: %v, want the interruption", err)
		}
	})
}

func TestExecName(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "my_limiter.py")
	if err := os.WriteFile(script, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]string{
		"python3 " + script:           "my_limiter",
		"python3 -u '" + script + "'": "my_limiter",
		"./mylimiter --fast":          "mylimiter",
		"  ":                          "",
	} {
		if got := ExecName(cmd); got != want {
			t.Errorf("ExecName(%q) = %q, want %q", cmd, got, want)
		}
	}
}

// TestExecClockCheck: before the first limiter, a program that decides by its own clock
// is caught, one that decides by t_ns passes, and so does one that refuses nothing (it
// cannot be told apart), and the check leaves no child behind and no decisions in Stats.
func TestExecClockCheck(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	// A fixed window of `limit` per `window_ns`, on the clock named by its argument:
	// "wall" reads time.time_ns(), "virtual" the request's t_ns.
	prog := filepath.Join(dir, "window.py")
	if err := os.WriteFile(prog, []byte(`import json, sys, time
clock = sys.argv[1]
counts = {}
for line in sys.stdin:
    r = json.loads(line)
    now = time.time_ns() if clock == "wall" else r["t_ns"]
    w = (r["key"], now // r["window_ns"])
    ok = counts.get(w, 0) + r["cost"] <= r["limit"]
    if ok:
        counts[w] = counts.get(w, 0) + r["cost"]
    print(json.dumps({"allowed": ok}), flush=True)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := algorithms.Policy{Limit: 20, Window: time.Minute}
	for _, c := range []struct {
		name, command string
		caught        bool
	}{
		{"wall clock", "python3 " + prog + " wall", true},
		{"virtual clock", "python3 " + prog + " virtual", false},
		{"refuses nothing", `while read l; do echo '{"allowed":true}'; done`, false},
		{"refuses everything", `while read l; do echo '{"allowed":false}'; done`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &Exec{Command: c.command, Grace: 200 * time.Millisecond, name: "window"}
			defer e.Close()
			l, err := e.New(p)
			if c.caught {
				if err == nil || !strings.Contains(err.Error(), "does not decide by the request's t_ns") || !strings.Contains(err.Error(), "--limiter-clock-check=false") {
					t.Fatalf("error %v, want the clock check's", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st := e.Stats(); st.Decisions != 0 {
				t.Errorf("the check's %d answers were counted as the run's", st.Decisions)
			}
			if d := l.Allow(0, 1, 1); !d.Allowed && c.name != "refuses everything" {
				t.Error("the run's first request was refused")
			}
			l.(Limiter).Close()
		})
	}
	// Skipped on request: the wall-clock program runs.
	e := &Exec{Command: "python3 " + prog + " wall", SkipClockCheck: true, Grace: 200 * time.Millisecond, name: "window"}
	defer e.Close()
	if _, err := e.New(p); err != nil {
		t.Fatal(err)
	}
}

// TestExecSendsEachRequestsVirtualTime: a program that echoes each request's t_ns (as its
// retry_after_ns) and cost (as its remaining) gets exactly the virtual time and cost of
// every request, for several keys, across the boundary of a minute and stamped back.
func TestExecSendsEachRequestsVirtualTime(t *testing.T) {
	const echo = `while read l; do t=${l#*\"t_ns\":}; t=${t%%,*}; c=${l#*\"cost\":}; c=${c%%,*}; ` +
		`echo "{\"allowed\":false,\"retry_after_ns\":$t,\"remaining\":$c}"; done`
	e := &Exec{Command: echo, Timeout: 5 * time.Second, name: "echo"}
	defer e.Close()
	l, err := e.New(algorithms.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	lim := l.(Limiter)
	minute := int64(1767261660) * int64(time.Second) // 10:01:00 on 2026-01-01
	reqs := []testRequest{
		{0, minute - 100*int64(time.Millisecond), 1},
		{1, minute - 1, 3},
		{0, minute, 1},
		{2, minute + 100*int64(time.Millisecond), 7},
		{1, minute - int64(time.Second), 2},
		{2, 1, 1},
	}
	for _, r := range reqs {
		lim.SetName(r.key, "user_"+strconv.Itoa(int(r.key)))
		lim.Send(r.key, r.now, r.cost)
	}
	for i, r := range reqs {
		d := lim.Receive()
		if int64(d.RetryAfter) != r.now || d.Remaining != r.cost {
			t.Errorf("request %d %+v: the program was sent t_ns %d and cost %d", i, r, int64(d.RetryAfter), d.Remaining)
		}
	}
	if err := lim.Close(); err != nil {
		t.Fatal(err)
	}
}
