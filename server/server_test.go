package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestServer(t *testing.T, alg string, pol algorithms.Policy, key string, clock *fakeClock) (*httptest.Server, *Handler) {
	t.Helper()
	lim, err := algorithms.New(alg, pol)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Limiter: lim, Policy: response.Policy{Name: "test", Policy: pol}, Key: key, Now: clock.Now,
		Headers: response.Headers{Legacy: true}, MaxKeys: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config = NewHTTPServer(h)
	srv.Start() // httptest listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv, h
}

func get(t *testing.T, url string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestNPlusOneIsRefusedAndRetryAfterIsEnough(t *testing.T) {
	for _, alg := range algorithms.Names {
		t.Run(alg, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)}
			pol := algorithms.Policy{Limit: 5, Window: 10 * time.Second}
			srv, _ := newTestServer(t, alg, pol, "global", clock)
			for i := range 5 {
				if r := get(t, srv.URL); r.StatusCode != 200 || r.Header.Get("RateLimit-Remaining") != strconv.Itoa(4-i) {
					t.Fatalf("request %d: %d, remaining %q", i+1, r.StatusCode, r.Header.Get("RateLimit-Remaining"))
				}
			}
			r := get(t, srv.URL)
			if r.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("6th request: %d, want 429", r.StatusCode)
			}
			if r.Header.Get("Content-Type") != "application/problem+json" || r.Header.Get("Cache-Control") != "no-store" ||
				r.Header.Get("RateLimit-Policy") != `"test";q=5;w=10` || !strings.HasPrefix(r.Header.Get("RateLimit"), `"test";r=0;t=`) {
				t.Fatalf("headers %v", r.Header)
			}
			var prob response.Problem
			if err := json.NewDecoder(r.Body).Decode(&prob); err != nil || prob.Status != 429 || prob.Policy != "test" {
				t.Fatalf("body %+v (%v)", prob, err)
			}
			wait, ok := response.ParseRetryAfter(r.Header.Get("Retry-After"), clock.Now())
			if !ok || wait < time.Second || wait > 20*time.Second || prob.RetryAfterSeconds == nil || time.Duration(*prob.RetryAfterSeconds)*time.Second != wait {
				t.Fatalf("Retry-After %q, body %v", r.Header.Get("Retry-After"), prob.RetryAfterSeconds)
			}
			clock.Add(wait)
			if r := get(t, srv.URL); r.StatusCode != 200 {
				t.Fatalf("after Retry-After (%s): %d, want 200", wait, r.StatusCode)
			}
		})
	}
}

func TestKeysAreSeparateAndBounded(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	srv, h := newTestServer(t, "fixed-window", algorithms.Policy{Limit: 1, Window: time.Minute}, "header:X-API-Key", clock)
	if get(t, srv.URL, "X-API-Key", "a").StatusCode != 200 || get(t, srv.URL, "X-API-Key", "a").StatusCode != 429 {
		t.Fatal("key a: want 200 then 429")
	}
	if get(t, srv.URL, "X-API-Key", "b").StatusCode != 200 {
		t.Fatal("key b is limited with key a")
	}
	// MaxKeys is 3: a, b, then c; d and e share the overflow key.
	get(t, srv.URL, "X-API-Key", "c")
	if get(t, srv.URL, "X-API-Key", "d").StatusCode != 200 || get(t, srv.URL, "X-API-Key", "e").StatusCode != 429 {
		t.Fatal("newcomers past MaxKeys should share one key")
	}
	if h.Keys() != 4 {
		t.Fatalf("%d keys held, want 3 + overflow", h.Keys())
	}
	long := strings.Repeat("k", 5000)
	get(t, srv.URL, "X-API-Key", long)
}

func TestClockGoingBackDoesNotBreakTheLimiter(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	srv, _ := newTestServer(t, "sliding-log", algorithms.Policy{Limit: 2, Window: time.Second}, "ip", clock)
	get(t, srv.URL)
	clock.Add(-time.Hour)
	get(t, srv.URL)
	if r := get(t, srv.URL); r.StatusCode != 429 {
		t.Fatalf("a step back of the clock reopened the window: %d", r.StatusCode)
	}
}

func TestMalformedAndHugeRequestsDoNotHurtTheServer(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	srv, _ := newTestServer(t, "gcra", algorithms.Policy{Limit: 100, Window: time.Second}, "ip", clock)
	raw := func(payload string) string {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, payload)
		line, _ := bufio.NewReader(conn).ReadString('\n')
		return line
	}
	for _, tt := range []struct {
		name, payload, want string
	}{
		{"garbage", "\x00\x01\x02 not http at all\r\n\r\n", "HTTP/1.1 400"},
		{"bad header line", "GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", "HTTP/1.1 400"},
		{"huge header", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", "HTTP/1.1 431"},
		{"many headers", "GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", 5000) + "\r\n", "HTTP/1.1 431"},
		{"bad method", "G\x7fT / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
	} {
		if got := raw(tt.payload); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: status line %q, want %s", tt.name, got, tt.want)
		}
	}
	if r := get(t, srv.URL); r.StatusCode != 200 {
		t.Fatalf("after bad requests: %d", r.StatusCode)
	}
}

func TestParseKey(t *testing.T) {
	for _, ok := range []string{"ip", "global", "header:X-API-Key"} {
		if err := ParseKey(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "user", "header:", "header:a b", "header:x:y"} {
		if err := ParseKey(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
