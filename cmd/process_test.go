package cmd

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"time"

	"github.com/rlsim/rlsim/internal/testnet"
)

// The tests here run rlsim as its own process, built with go build, to do to it what a
// user does: interrupt it, kill it, run it out of room.

var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// rlsimBinary builds the command once per test binary and returns its path.
func rlsimBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "rlsim-bin-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "rlsim")
		out, err := exec.Command("go", "build", "-o", built.path, "..").CombinedOutput()
		if err != nil {
			built.err = &exec.ExitError{Stderr: out}
		}
	})
	if built.err != nil {
		t.Fatalf("go build: %v", built.err)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// exitStatus is a finished process's exit code, or -signal when a signal ended it.
func exitStatus(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -int(ws.Signal())
	}
	return state.ExitCode()
}

// waitFor polls cond every millisecond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// stagedFileOpen reports whether process pid holds a file of dir open that has no name
// (a staged file: O_TMPFILE shows as "dir/#inode (deleted)").
func stagedFileOpen(pid int, dir string) bool {
	fds, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "fd", "*"))
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err == nil && strings.HasPrefix(target, dir+"/") && strings.HasSuffix(target, " (deleted)") {
			return true
		}
	}
	return false
}

// A run killed outright (SIGKILL: no handler runs) while it writes a decisions file
// leaves nothing in the folder: the file it was writing had no name yet.
func TestKilledRunLeavesNoFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the nameless staged file is Linux's")
	}
	bin := rlsimBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "steady-poisson", "--decisions", filepath.Join(dir, "decisions.csv"), "--out", filepath.Join(dir, "out"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitFor(20*time.Second, func() bool { return stagedFileOpen(cmd.Process.Pid, dir) }) {
		t.Fatal("the run never opened its decisions file")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("a killed run left %v", got)
	}
}

// A disk that fills while the decisions are written (a file-size limit, which fails the
// write as a full disk does) fails the run with one line, exit 1: no result file, no
// hidden temporary file, the old decisions file as it was.
func TestFullDiskWritesNothing(t *testing.T) {
	bin := rlsimBinary(t)
	dir := t.TempDir()
	decisions := filepath.Join(dir, "decisions.csv")
	writeFile(t, decisions, "old decisions\n")
	// 16 blocks: 8 or 16 KiB, whichever the shell counts; boundary-burst's decisions take
	// about 70 KiB.
	cmd := exec.Command("sh", "-c", `ulimit -f 16 && exec "$0" "$@"`, bin, "run", "boundary-burst",
		"--decisions", decisions, "--out", filepath.Join(dir, "out"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	if code := exitStatus(cmd.ProcessState); code != 1 || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 ||
		!strings.Contains(stderr.String(), "file too large") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	t.Log(strings.TrimSpace(stderr.String()))
	if got := string(readFile(t, decisions)); got != "old decisions\n" {
		t.Errorf("decisions file overwritten: %.60q", got)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"decisions.csv"}) {
		t.Errorf("the folder holds %v", got)
	}
}

// pausableProxy forwards TCP connections to target until paused; from then on it holds
// every byte, as a server that has stopped answering does.
type pausableProxy struct {
	ln     net.Listener
	paused atomic.Bool
}

func newPausableProxy(t *testing.T, target string) *pausableProxy {
	t.Helper()
	ln := testnet.Listen(t)
	p := &pausableProxy{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		p.paused.Store(false) // let the copies see their connections closed and end
	})
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			go p.pipe(in, out)
			go p.pipe(out, in)
		}
	}()
	return p
}

func (p *pausableProxy) pipe(from, to net.Conn) {
	defer from.Close()
	defer to.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		for p.paused.Load() {
			time.Sleep(time.Millisecond)
		}
		if n > 0 {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *pausableProxy) addr() string { return p.ln.Addr().String() }

// `rlsim run cluster-nonatomic --redis` as its own process, sent SIGINT once a crash has
// left a counter without a TTL: zero keys left, exit 130, one line, no file.
func TestInterruptedProcessCleansUp(t *testing.T) {
	bin := rlsimBinary(t)
	url, keys := storeForTest(t)
	dir := t.TempDir()
	file, prefix := nonatomicOnPrefix(t, dir)
	cmd := exec.Command(bin, "run", file, "--redis", url, "--pipeline", "1",
		"--decisions", filepath.Join(dir, "decisions.csv"), "--out", filepath.Join(dir, "out"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitFor(60*time.Second, func() bool { _, noTTL := keys(prefix); return noTTL > 0 }) {
		t.Fatal("the run never left a counter without a TTL")
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := exitStatus(cmd.ProcessState); code != 130 || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 ||
		!strings.HasPrefix(stderr.String(), "rlsim: interrupted by SIGINT; deleted the ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	t.Log(strings.TrimSpace(stderr.String()))
	if n, _ := keys(prefix); n != 0 {
		t.Errorf("%d keys left under %s", n, prefix)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"cluster-nonatomic.yaml"}) {
		t.Errorf("the folder holds %v", got)
	}
}

// A second SIGINT ends the process at once, while the first one's cleanup waits on a
// store that has stopped answering (each of its round trips would wait 2 s): the process
// dies of the signal within half a second, and the decisions file it was writing, which
// had no name, is gone with it.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the nameless staged file is Linux's")
	}
	bin := rlsimBinary(t)
	m := testnet.Miniredis(t)
	proxy := newPausableProxy(t, m.Addr())
	dir := t.TempDir()
	file, prefix := nonatomicOnPrefix(t, dir)
	cmd := exec.Command(bin, "run", file, "--redis", "redis://"+proxy.addr(), "--pipeline", "1",
		"--decisions", filepath.Join(dir, "decisions.csv"), "--out", filepath.Join(dir, "out"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitFor(60*time.Second, func() bool {
		for _, k := range m.Keys() {
			if strings.HasPrefix(k, prefix) {
				return true
			}
		}
		return false
	}) {
		t.Fatal("the run never wrote a key")
	}
	proxy.paused.Store(true)
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(200 * time.Millisecond) // the first signal is being handled: the cleanup waits on the store
	second := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	took := time.Since(second)
	if code := exitStatus(cmd.ProcessState); code != -int(syscall.SIGINT) {
		t.Errorf("exit status %d, want death by SIGINT", code)
	}
	if took > 500*time.Millisecond {
		t.Errorf("the process lived %s after the second signal", took)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"cluster-nonatomic.yaml"}) {
		t.Errorf("the folder holds %v", got)
	}
}
