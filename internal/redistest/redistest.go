// Package redistest starts redis-server processes of their own for tests that must
// reconfigure a server — maxmemory, REPLICAOF — and so may not touch the one CI shares
// between packages (RLSIM_REDIS_URL).
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/internal/testnet"
	"github.com/rlsim/rlsim/store"
)

// Start starts a redis-server on a free loopback port with no persistence and the extra
// arguments given, waits until it answers, and stops it when the test ends. Like every
// real-server test it runs only where RLSIM_REDIS_URL is set (CI sets it), and it needs
// redis-server on the PATH; otherwise it skips the test. The port is one the system just
// gave and took back, which another process can take first on a busy machine: a server
// that exits at once (its port taken) is started again on another.
func Start(t testing.TB, args ...string) (url string, port int) {
	t.Helper()
	if os.Getenv("RLSIM_REDIS_URL") == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on the PATH")
	}
	for attempt := 1; ; attempt++ {
		url, port, err := start(t, bin, args)
		if err == nil {
			return url, port
		}
		if attempt == 5 {
			t.Fatal(err)
		}
		t.Logf("redis-server, attempt %d: %v; trying another port", attempt, err)
	}
}

// start is one attempt of Start: an error when the server exited before it answered.
func start(t testing.TB, bin string, args []string) (string, int, error) {
	ln := testnet.Listen(t)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// A replica writes the RDB of its full resynchronisation to its directory even without
	// --save: a directory of its own keeps it out of the package's.
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-exited:
			exited <- err
			return "", 0, fmt.Errorf("redis-server on port %d exited: %v", port, err)
		default:
		}
		r, err := store.NewRedis(url)
		if err == nil {
			r.Close()
			t.Cleanup(stop)
			return url, port, nil
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("redis-server on port %d: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Info reads one integer field of a server's INFO section.
func Info(t testing.TB, r *store.Redis, section, field string) int64 {
	t.Helper()
	s, err := r.Client().Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}
