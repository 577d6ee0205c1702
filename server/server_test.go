package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/internal/testnet"
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
	// The leaky bucket's queue is not cut short, and its hold returns at once: time is
	// the fake clock's.
	return newTestServerWith(t, alg, pol, Config{Key: key, Now: clock.Now, MaxKeys: 3, MaxDelay: time.Hour,
		Wait: func(context.Context, time.Duration) bool { return true }})
}

// newTestServerWith serves alg under pol with cfg's other fields, on 127.0.0.1.
func newTestServerWith(t *testing.T, alg string, pol algorithms.Policy, cfg Config) (*httptest.Server, *Handler) {
	t.Helper()
	lim, err := algorithms.New(alg, pol)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Limiter, cfg.Policy, cfg.Headers = lim, response.Policy{Name: "test", Policy: pol}, response.Headers{Legacy: true}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: testnet.Listen(t), Config: NewServer(h).srv}
	srv.Start() // on 127.0.0.1
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
	for _, alg := range algorithms.Defaults() {
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
	clock.Add(20 * time.Second)
	get(t, srv.URL, "X-API-Key", "c")
	// MaxKeys is 3 and a, b and c all hold a count until 10:01:00: d is turned away with
	// the time until the first of them is idle, and nobody's count is lost or shared.
	r := get(t, srv.URL, "X-API-Key", "d")
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "40" {
		t.Fatalf("a newcomer to a table full of busy keys: %d, Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if get(t, srv.URL, "X-API-Key", "a").StatusCode != 429 || h.Keys() != 3 {
		t.Fatalf("key a's count was lost; %d keys held", h.Keys())
	}
	clock.Add(40 * time.Second)
	// At 10:01:00 every count is back to zero: d takes an idle key's place.
	if get(t, srv.URL, "X-API-Key", "d").StatusCode != 200 || get(t, srv.URL, "X-API-Key", "d").StatusCode != 429 {
		t.Fatal("key d: want 200 then 429 once keys are idle")
	}
	if h.Keys() > 3 || h.Evicted() < 2 {
		t.Fatalf("%d keys held, %d evicted", h.Keys(), h.Evicted())
	}
	long := strings.Repeat("k", 5000)
	get(t, srv.URL, "X-API-Key", long)
}

// TestEvictionChangesNoDecision drives a table of two keys with four clients at times
// chosen around the moments keys become idle (one nanosecond before, at, after), and
// checks every decision against a limiter that never evicts: evicting a key whose Reset
// has run out must not change a single field of any later decision. Newcomers turned
// away while both keys hold state never reach either limiter.
func TestEvictionChangesNoDecision(t *testing.T) {
	policies := []algorithms.Policy{
		{Limit: 3, Window: time.Second},
		{Limit: 7, Window: 10 * time.Second, Burst: 3},
		{Limit: 5, Window: 3 * time.Second, Burst: 9},
	}
	for _, pol := range policies {
		for _, alg := range algorithms.Defaults() {
			t.Run(pol.String()+"/"+alg, func(t *testing.T) {
				clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 0, 123, time.UTC)}
				lim, _ := algorithms.New(alg, pol)
				h, err := New(Config{Limiter: lim, Policy: response.Policy{Name: "p", Policy: pol}, Key: "global",
					MaxKeys: 2, MaxDelay: time.Hour, Now: clock.Now})
				if err != nil {
					t.Fatal(err)
				}
				ref, _ := algorithms.New(alg, pol)
				rng := rand.New(rand.NewPCG(7, uint64(len(alg))))
				var decided, turnedAway int
				for range 4000 {
					key := strconv.Itoa(rng.IntN(4))
					now := clock.Now().UnixNano()
					switch step := rng.IntN(10); {
					case step < 3 && len(h.keys.idle) > 0:
						// One ns before, at, or one ns after a key becomes idle.
						next := h.keys.idle[rng.IntN(len(h.keys.idle))].idleAt + int64(rng.IntN(3)) - 1
						if next > now {
							clock.Add(time.Duration(next - now))
						}
					case step < 8:
						clock.Add(time.Duration(rng.Int64N(int64(pol.Window) / pol.Limit)))
					}
					cost := 1 + rng.Int64N(2)
					v := h.decide(key, cost)
					if v.full {
						turnedAway++
						continue
					}
					k, _ := strconv.Atoi(key)
					want := ref.Allow(uint32(k), clock.Now().UnixNano(), cost)
					if v.d != want {
						t.Fatalf("request %d (key %s, cost %d): %+v, never evicting gives %+v", decided, key, cost, v.d, want)
					}
					decided++
				}
				if h.Evicted() < 100 || turnedAway < 100 {
					t.Fatalf("only %d evictions and %d newcomers turned away: the test did not exercise the table", h.Evicted(), turnedAway)
				}
				if lim.Keys() > 2 {
					t.Fatalf("the limiter holds state for %d keys, more than MaxKeys", lim.Keys())
				}
			})
		}
	}
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

// TestHeaderNamesOnTheWire: the rate-limit headers leave the server spelled as the
// specifications and `rlsim headers` spell them ("RateLimit-Policy"), not as net/http
// canonicalizes them ("Ratelimit-Policy"); read off the raw connection.
func TestHeaderNamesOnTheWire(t *testing.T) {
	srv, _ := newTestServer(t, "fixed-window", algorithms.Policy{Limit: 1, Window: time.Minute}, "ip", &fakeClock{t: time.Unix(1767261600, 0)})
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	raw, _ := io.ReadAll(conn)
	for _, name := range []string{"RateLimit-Policy: ", "RateLimit: ", "RateLimit-Limit: ", "RateLimit-Remaining: ", "RateLimit-Reset: "} {
		if !strings.Contains(string(raw), "\r\n"+name) {
			t.Errorf("the response lacks %q:\n%s", name, raw)
		}
	}
}

// The 431 starts where the docs say, at 16 KiB: a request head (request line, header
// fields, the blank line) of 16384 bytes is served, one of 16385 is refused.
func TestHeaderLimitIs16KiB(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	srv, _ := newTestServer(t, "gcra", algorithms.Policy{Limit: 100, Window: time.Second}, "ip", clock)
	head := func(size int) string {
		start, end := "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ", "\r\n\r\n"
		return start + strings.Repeat("a", size-len(start)-len(end)) + end
	}
	for _, tc := range []struct {
		size int
		want string
	}{{MaxHeaderBytes - 1000, "HTTP/1.1 200"}, {MaxHeaderBytes, "HTTP/1.1 200"}, {MaxHeaderBytes + 1, "HTTP/1.1 431"}} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		req := head(tc.size)
		if len(req) != tc.size {
			t.Fatalf("a head of %d bytes, want %d", len(req), tc.size)
		}
		io.WriteString(conn, req)
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if !strings.HasPrefix(line, tc.want) {
			t.Errorf("a request head of %d bytes: %q, want %s", tc.size, line, tc.want)
		}
	}
	if MaxHeaderBytes != 16<<10 {
		t.Errorf("MaxHeaderBytes = %d, the docs say 16 KiB", MaxHeaderBytes)
	}
}
