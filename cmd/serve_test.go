package cmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlsim/rlsim/response"
)

// syncBuffer is a bytes.Buffer safe to read while the server writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startServe runs `rlsim serve` on a loopback port the OS picks, with the options the
// command line would set, and returns its base URL and a channel with runServe's result.
func startServe(t *testing.T, ctx context.Context, clock func() time.Time, args ...string) (string, <-chan error, *syncBuffer) {
	t.Helper()
	return startServeWith(t, ctx, func(o *serveOptions) { o.now = clock }, args...)
}

// startServeWith is startServe with set changing the parsed options before the run.
func startServeWith(t *testing.T, ctx context.Context, set func(*serveOptions), args ...string) (string, <-chan error, *syncBuffer) {
	t.Helper()
	o := &serveOptions{globalOptions: &globalOptions{format: "table"}}
	c := newServeCmdFor(o, IO{})
	if err := c.ParseFlags(append([]string{"--addr", "127.0.0.1:0"}, args...)); err != nil {
		t.Fatal(err)
	}
	set(o)
	addr := make(chan string, 1)
	o.ready = func(a string) { addr <- a }
	errOut := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, o, IO{Out: io.Discard, Err: errOut}) }()
	select {
	case a := <-addr:
		return "http://" + a, done, errOut
	case err := <-done:
		t.Fatalf("serve ended before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	return "", nil, nil
}

func TestServeEndToEnd(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ctx, cancel := context.WithCancel(context.Background())
	url, done, errOut := startServe(t, ctx, clock, "--limit", "3", "--window", "1m", "--algorithm", "fixed-window", "--name", "e2e")
	client := &http.Client{Timeout: 5 * time.Second}
	do := func() *http.Response {
		resp, err := client.Get(url + "/anything")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := range 3 {
		resp := do()
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i+1, resp.StatusCode)
		}
	}
	resp := do()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" ||
		resp.Header.Get("RateLimit") != `"e2e";r=0;t=60` || !strings.Contains(string(body), `"policy":"e2e"`) {
		t.Fatalf("4th request: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	wait, _ := response.ParseRetryAfter(resp.Header.Get("Retry-After"), clock())
	mu.Lock()
	now = now.Add(wait)
	mu.Unlock()
	if resp := do(); resp.StatusCode != 200 {
		t.Fatalf("after Retry-After: %d", resp.StatusCode)
	}
	// Hostile input on the same server: a 64 KiB header and a line that is not HTTP.
	for payload, want := range map[string]string{
		"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n": "HTTP/1.1 431",
		"\x16\x03\x01 not http\r\n\r\n": "HTTP/1.1 400",
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, payload)
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if !strings.HasPrefix(line, want) {
			t.Errorf("hostile request answered %q, want %s", line, want)
		}
	}
	if resp := do(); resp.StatusCode != 200 {
		t.Fatalf("after hostile requests: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(errOut.String(), "stopped") {
		t.Fatalf("stderr: %s", errOut)
	}
}

func TestServeStopsCleanlyOnSIGINT(t *testing.T) {
	url, done, errOut := startServe(t, context.Background(), nil, "--limit", "10", "--window", "1s")
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// runServe has registered for SIGINT before it reported ready, so the signal goes
	// to it and not to the test binary's default handler.
	raise(t, syscall.SIGINT)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	if !strings.Contains(errOut.String(), "stopped after 1 key(s)") {
		t.Fatalf("stderr: %s", errOut)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("still serving after SIGINT")
	}
}

// TestServeStopsAtOnceWithHalfOpenConnections leaves a bare TCP connection, half a
// request, an idle keep-alive connection and a request queued in the leaky bucket open,
// and sends SIGTERM: the server closes them all and returns without error well within a
// second (net/http's own Shutdown would wait for the half-sent request).
func TestServeStopsAtOnceWithHalfOpenConnections(t *testing.T) {
	url, done, errOut := startServe(t, context.Background(), nil, "--algorithm", "leaky-bucket", "--limit", "1", "--window", "10s",
		"--burst", "2", "--max-delay", "1m")
	addr := strings.TrimPrefix(url, "http://")
	dial := func(payload string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, payload)
		return c
	}
	bare := dial("")
	half := dial("GET / HTTP/1.1\r\nHost: x\r\nX-Half: ")
	idle := dial("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if line, _ := bufio.NewReader(idle).ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("first request: %q", line)
	}
	queued := dial("GET / HTTP/1.1\r\nHost: x\r\n\r\n") // waits 10 s for its turn
	time.Sleep(100 * time.Millisecond)                  // let the server read what was sent
	start := time.Now()
	raise(t, syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop within 5 s of SIGTERM")
	}
	if took := time.Since(start); took >= time.Second {
		t.Fatalf("stopping took %s, want under 1 s", took)
	}
	queued.SetDeadline(time.Now().Add(2 * time.Second))
	if line, _ := bufio.NewReader(queued).ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Errorf("queued request answered %q, want 503", line)
	}
	for name, c := range map[string]net.Conn{"bare": bare, "half-sent": half, "idle": idle} {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s connection: read %d, %v; want it closed", name, n, err)
		}
	}
	if !strings.Contains(errOut.String(), "stopped after 1 key(s) held") {
		t.Fatalf("stderr: %s", errOut)
	}
}

// TestServeSecondSignalStopsAtOnce holds a response past the first SIGINT (a hold that
// ignores the stop, and a grace of a minute), and checks that a second SIGINT returns at
// once with the signal's exit status.
func TestServeSecondSignalStopsAtOnce(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url, done, _ := startServeWith(t, context.Background(), func(o *serveOptions) {
		o.grace = time.Minute
		o.wait = func(context.Context, time.Duration) bool { <-release; return true }
	}, "--algorithm", "leaky-bucket", "--limit", "1", "--window", "1s", "--burst", "5")
	client := &http.Client{Timeout: 10 * time.Second}
	for range 2 {
		go func() {
			if resp, err := client.Get(url); err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // one request is now held
	raise(t, syscall.SIGINT)
	select {
	case err := <-done:
		t.Fatalf("stopped on the first signal with a response held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	start := time.Now()
	raise(t, syscall.SIGINT)
	select {
	case err := <-done:
		var se signalError
		if !errors.As(err, &se) || se.ExitCode() != 130 {
			t.Fatalf("second signal: %v, want exit 130", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a second SIGINT did not stop serve")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a second signal took %s", took)
	}
}

func TestServeBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--key", "cookie"}, {"--addr", "nowhere"}, {"--limit", "0"}, {"--algorithm", "x"},
		{"--max-keys", "0"}, {"--max-delay", "0s"}, {"--max-delay", "2h"}, {"--cost-header", "a b"}} {
		_, errOut, code := rlsim(t, append([]string{"serve"}, args...)...)
		if code != 2 || !strings.Contains(errOut, args[0]) {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	// A port already taken is a run error, not a usage error.
	url, done, _ := startServe(t, context.Background(), nil)
	_, errOut, code := rlsim(t, "serve", "--addr", strings.TrimPrefix(url, "http://"))
	if code != 1 || !strings.Contains(errOut, "--addr") {
		t.Errorf("busy port: exit %d, %q", code, errOut)
	}
	raise(t, syscall.SIGINT)
	<-done
}
