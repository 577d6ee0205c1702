package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func repoPath(t *testing.T, parts ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(append([]string{".."}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

// TestOwnLimitersInCompare: a --lua script and a --limiter-exec program are judged
// beside the built-ins they mirror, in the JSON as in the tables, and the program's
// decisions per second are reported on stderr.
func TestOwnLimitersInCompare(t *testing.T) {
	t.Parallel()
	needPython(t)
	out, errOut, code := runCLI(t, "compare", "--scenario", "boundary-burst", "--algorithms", "fixed-window,token-bucket",
		"--lua", repoPath(t, "examples", "lua", "fixed_window.lua"),
		"--limiter-exec", "python3 "+repoPath(t, "examples", "exec", "token_bucket.py"),
		"--worst-budget", "0", "--format", "json", "--out", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Results []struct {
			Algorithm          string   `json:"algorithm"`
			Admitted           int64    `json:"admitted"`
			OverAdmission      float64  `json:"over_admission"`
			WorstOverAdmission *float64 `json:"worst_over_admission"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	byName := map[string]int{}
	for i, r := range rep.Results {
		byName[r.Algorithm] = i
	}
	for own, builtin := range map[string]string{"fixed_window": "fixed-window", "token_bucket": "token-bucket"} {
		i, ok := byName[own]
		if !ok {
			t.Fatalf("no result for %s in %s", own, out)
		}
		a, b := rep.Results[i], rep.Results[byName[builtin]]
		if a.Admitted != b.Admitted || a.OverAdmission != b.OverAdmission || a.Admitted == 0 {
			t.Errorf("%s admitted %d (%.2f×), %s %d (%.2f×)", own, a.Admitted, a.OverAdmission, builtin, b.Admitted, b.OverAdmission)
		}
		if a.WorstOverAdmission == nil || *a.WorstOverAdmission < 1.5 {
			t.Errorf("%s: worst_over_admission %v, want the structured attacks' ~2", own, a.WorstOverAdmission)
		}
	}
	if !strings.Contains(errOut, "rlsim: --limiter-exec token_bucket: 200 decisions in ") || !strings.Contains(errOut, " decisions/s") {
		t.Errorf("stderr lacks the program's decisions per second:\n%s", errOut)
	}
	if !regexp.MustCompile(`(?m)^rlsim: --lua \S*fixed_window.lua: 200 decisions in [0-9.]+s of wall time on the embedded miniredis: \d+ decisions/s(; and \d+ for the checks and the worst-case search in [0-9.]+s)?$`).MatchString(errOut) {
		t.Errorf("stderr lacks the script's decisions per second:\n%s", errOut)
	}
}

// TestOwnLimitersErrors: each bad use is one clear line naming the flag, the file or the
// request, with nothing written.
func TestOwnLimitersErrors(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fw := repoPath(t, "examples", "lua", "fixed_window.lua")
	builtinName := write("gcra.lua", "return 1")
	broken := write("broken.lua", "return ((")
	raises := write("raises.lua", "if tonumber(ARGV[1]) > 0 then return redis.error_reply('no state') end return 1")
	garbage := write("garbage.sh", "while read l; do echo nope; done")
	// A fixed window on the wall clock: it ignores t_ns, as a JavaScript library does
	// unless its clock is replaced.
	wallClock := write("wall.py", `import json, sys, time
seen = {}
for line in sys.stdin:
    r = json.loads(line)
    w = (r["key"], time.time_ns() // r["window_ns"])
    ok = seen.get(w, 0) + r["cost"] <= r["limit"]
    if ok:
        seen[w] = seen.get(w, 0) + r["cost"]
    print(json.dumps({"allowed": ok}), flush=True)
`)
	out := filepath.Join(dir, "results")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"compare", "--scenario", "boundary-burst", "--lua", filepath.Join(dir, "nope.lua")}, 1, "--lua " + filepath.Join(dir, "nope.lua") + ": no such file or directory"},
		{[]string{"compare", "--scenario", "boundary-burst", "--lua", builtinName}, 2, `its name "gcra" is a built-in algorithm's`},
		{[]string{"compare", "--scenario", "boundary-burst", "--lua", fw, "--lua", fw}, 2, `its name "fixed_window" is also that of --lua`},
		{[]string{"compare", "--scenario", "boundary-burst", "--lua", broken}, 1, "--lua " + broken + ": the server cannot load the script"},
		{[]string{"compare", "--scenario", "boundary-burst", "--lua", raises}, 1, "lua script " + raises + `: request 1 (key "user_8812" at 2026-01-01T10:00:59.9Z, cost 1): the script failed: no state`},
		{[]string{"compare", "--scenario", "boundary-burst", "--limiter-exec", "sh " + garbage, "--limiter-clock-check=false"}, 1, `request 1 (key "user_8812" at 2026-01-01T10:00:59.9Z, cost 1): answered "nope"`},
		{[]string{"compare", "--scenario", "boundary-burst", "--limiter-exec", "sh " + garbage}, 1, `checking that it decides by t_ns (key "rlsim-clock-check"; --limiter-clock-check=false leaves the check out): limiter-exec 'sh ` + garbage + `': request 1 (key "rlsim-clock-check" at 2026-01-01T00:00:00Z, cost 1): answered "nope"`},
		{[]string{"compare", "--scenario", "boundary-burst", "--limiter-exec", "python3 " + wallClock}, 1, "does not decide by the request's t_ns"},
		{[]string{"compare", "--scenario", "boundary-burst", "--limiter-exec", " "}, 2, "--limiter-exec \" \": an empty command"},
		{[]string{"replay", "access.log", "--redis", "redis://127.0.0.1:1/0"}, 2, "--redis: replay runs only --lua scripts"},
		{[]string{"worst-case", "--redis", "redis://127.0.0.1:1/0"}, 2, "--redis: worst-case runs only --lua scripts"},
		{[]string{"worst-case", "--lua", raises, "--budget", "0", "--spans", "1"}, 1, "the script failed: no state"},
	} {
		_, errOut, code := runCLI(t, append(c.args, "--out", out)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("rlsim %s: exit %d, stderr:\n%s\nwant exit %d and %q", strings.Join(c.args, " "), code, errOut, c.code, c.want)
		}
		if fileExists(out) {
			t.Fatalf("rlsim %s wrote %s", strings.Join(c.args, " "), out)
		}
	}
}

// TestLimiterExecLeavesNoProcess: whether the program fails or the run ends well, the
// program and what it started are gone when rlsim returns, and the program (rlsim's
// child: exec replaces the shell) was waited for.
func TestLimiterExecLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, program string
		code          int
	}{
		{"garbage", "echo $$ >> %s; sleep 300 & while read l; do echo nope; done", 1},
		{"hangs", "echo $$ >> %s; sleep 300 & read l; exec sleep 300", 1},
		{"well", `echo $$ >> %s; sleep 300 & while read l; do echo '{"allowed":true}'; done`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			pids := filepath.Join(dir, c.name+".pids")
			prog := filepath.Join(dir, c.name+".sh")
			if err := os.WriteFile(prog, []byte(strings.Replace(c.program, "%s", pids, 1)), 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{"compare", "--scenario", "boundary-burst", "--limiter-exec", "exec sh " + prog, "--worst-budget", "0", "--out", ""}
			if c.name == "hangs" {
				args = append(args, "--limiter-timeout", "300ms")
			}
			start := time.Now()
			_, errOut, code := runCLI(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errOut)
			}
			if c.name == "hangs" && (!strings.Contains(errOut, "no answer within 300ms") || time.Since(start) > 5*time.Second) {
				t.Errorf("a hanging program took %s and said: %s", time.Since(start), errOut)
			}
			data, err := os.ReadFile(pids)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range strings.Fields(string(data)) {
				pid, _ := strconv.Atoi(f)
				if _, err := os.Stat("/proc/" + f); err == nil {
					t.Errorf("program %d was not reaped", pid)
				}
				waitGroupGone(t, pid)
			}
		})
	}
}

// waitGroupGone waits for every process of group pgid but zombies (a killed grandchild
// is init's to reap) to be gone.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	for range 100 {
		if len(groupLiving(pgid)) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("processes of group %d outlived the run: %q", pgid, groupLiving(pgid))
}

func groupLiving(pgid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[i+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			out = append(out, s[:i+1])
		}
	}
	return out
}

// TestOwnLimitersInWorstCase: worst-case searches a script beside the built-ins, with no
// bound, and finds the INCR + EXPIRE window's 2L−1.
func TestOwnLimitersInWorstCase(t *testing.T) {
	t.Parallel()
	out, errOut, code := runCLI(t, "worst-case", "--algorithms", "fixed-window", "--lua", repoPath(t, "examples", "lua", "incr_expire.lua"),
		"--limit", "10", "--window", "10s", "--budget", "0", "--spans", "1", "--out", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "│ incr_expire  │       19 │  1.90 │  found │       19 │") {
		t.Errorf("the summary lacks incr_expire's 19, found with no bound:\n%s", out)
	}
}

// TestHelperMain is rlsim's main in a child process for TestInterruptEndsPrograms; it
// does nothing in a normal test run.
func TestHelperMain(t *testing.T) {
	if os.Getenv("RLSIM_HELPER_MAIN") != "1" {
		t.Skip("runs only as the child of another test")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(Main(args, IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// TestInterruptEndsPrograms: an interrupt while a program decides kills it and what it
// started, and rlsim exits 130 saying so.
func TestInterruptEndsPrograms(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	prog := filepath.Join(dir, "slow.sh")
	if err := os.WriteFile(prog, []byte("echo $$ >> "+pids+"; sleep 300 & read l; exec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(os.Args[0], "-test.run=^TestHelperMain$", "--", "compare", "--scenario", "boundary-burst",
		"--limiter-exec", "exec sh "+prog, "--limiter-timeout", "1m", "--out", "")
	c.Env = append(os.Environ(), "RLSIM_HELPER_MAIN=1")
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for range 500 {
		if data, err := os.ReadFile(pids); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("the program never started: %s", stderr.String())
	}
	time.Sleep(100 * time.Millisecond) // let it reach the wait for an answer
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		c.Process.Kill()
		<-done
		t.Fatalf("rlsim did not end on an interrupt: %s", stderr.String())
	}
	if code := c.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "interrupted by SIGINT; the --limiter-exec programs were stopped") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	waitGroupGone(t, pid)
}

// TestOwnLimitersWarnOnClients: a scenario of closed-loop clients is served by the
// built-ins alone, and rlsim says so rather than drop the user's limiter silently.
func TestOwnLimitersWarnOnClients(t *testing.T) {
	_, errOut, code := runCLI(t, "compare", "--scenario", "retry-budget", "--algorithms", "fixed-window",
		"--lua", repoPath(t, "examples", "lua", "fixed_window.lua"), "--worst-budget", "0", "--out", "")
	if code != 0 || !strings.Contains(errOut, "rlsim: warning: scenario retry-budget: its closed-loop clients are served by the built-in algorithms only") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}
