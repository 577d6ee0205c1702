package cmd

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlsim/rlsim/internal/testnet"
)

// dyingProxy forwards connections to target until its clients have sent it after bytes,
// then dies as a server does: every connection closed, no new one accepted.
func dyingProxy(t *testing.T, target string, after int64) string {
	t.Helper()
	ln := testnet.Listen(t)
	var mu sync.Mutex
	var conns []net.Conn
	var sent int64
	dead := false
	die := func() {
		mu.Lock()
		defer mu.Unlock()
		if dead {
			return
		}
		dead = true
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
	}
	t.Cleanup(die)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			mu.Lock()
			if err != nil || dead {
				mu.Unlock()
				c.Close()
				continue
			}
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
						over := sent > after
						mu.Unlock()
						if over {
							die()
							return
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

// A Redis server that dies in the middle of a run: the run fails with one line that says
// which command failed and that the keys it wrote may be left on the server (it could
// not delete them), exit 1, no report, no file.
func TestDeadStoreFailsInOneLine(t *testing.T) {
	mr := testnet.Miniredis(t)
	addr := dyingProxy(t, mr.Addr(), 200_000)
	dir := t.TempDir()
	decisions := filepath.Join(dir, "d.csv")
	out, errOut, code := rlsim(t, "run", "cluster-shared", "--redis", "redis://"+addr, "--decisions", decisions)
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, want := range []string{"rlsim: scenario cluster-shared: ", "; keys it wrote may be left on the server: ", `deleting the keys the run wrote under "rlsim:cluster-shared:`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	if left := len(mr.Keys()); left == 0 {
		t.Error("the server kept no key: it died too late to test anything")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}
}
