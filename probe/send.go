package probe

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/rlsim/rlsim/response"
)

// Clock is the wall clock of a probe: tests replace it.
type Clock interface {
	Now() time.Time
	// SleepUntil returns at t, or early with ctx's error when ctx is done.
	SleepUntil(ctx context.Context, t time.Time) error
}

// WallClock is the real clock.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps until t.
func (WallClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Target is where and how a probe sends.
type Target struct {
	// URL is requested with GET for every request.
	URL string
	// KeyHeader, when set, carries each request's key in this header.
	KeyHeader string
	// KeyAddrs, when set, sends each key from its own source address on 127.0.0.0/8
	// (127.0.0.2 for the first key, and on), for targets that key by peer address.
	KeyAddrs bool
	// CostHeader, when set, carries each request's cost in this header; without it
	// every request is sent once whatever its cost.
	CostHeader string
	// Timeout bounds each request, from sending to the end of the response.
	Timeout time.Duration
	// Concurrency bounds the requests in flight; a request due while it is reached
	// waits, and is sent late (its lateness is measured).
	Concurrency int
	// HonorRetryAfter sends, for each refusal that carries a Retry-After of at most
	// MaxRetryWait, one retry of the same request when it says.
	HonorRetryAfter bool
	MaxRetryWait    time.Duration
	// RefusedCodes are the statuses counted as refusals (2xx are admissions).
	RefusedCodes []int
	// Transport replaces the HTTP transport (tests); KeyAddrs needs the default.
	Transport http.RoundTripper
	// Tag, when set, is the run's tag (RunTag): each request then carries its own,
	// "<Tag>-<n>", in TagHeader, for a server's log to record.
	Tag string
}

// MaxKeyAddrs is how many keys KeyAddrs can give an address of their own.
const MaxKeyAddrs = 1<<24 - 3

// KeyAddr is the source address of the i-th key (from 0) under KeyAddrs: 127.0.0.2 and
// on, skipping 127.0.0.1 (which other clients of the target on this machine use).
func KeyAddr(i int) netip.Addr {
	n := uint32(i) + 2
	return netip.AddrFrom4([4]byte{127, byte(n >> 16), byte(n >> 8), byte(n)})
}

// Exchange is one request sent and what came back.
type Exchange struct {
	Key  string
	Cost int64
	// Retry is set for a retry sent after a refusal's Retry-After; RetryOf is the index
	// of the refused exchange (-1 for a planned request).
	Retry   bool
	RetryOf int
	// Due, Sent and Received are offsets from the start: when the plan (or the
	// Retry-After) said to send it, when it was handed to the connection, and when its
	// response headers arrived.
	Due, Sent, Received time.Duration
	// Status is the response's status; 0 when Err is set.
	Status int
	Err    string
	// Unsent marks a retry that was due after the probe was stopped.
	Unsent bool
	// Tag is what the request carried in TagHeader (Target.Tag): "" without.
	Tag string
	// Quota is what the response's rate-limit headers said, when HasQuota.
	Quota    response.Quota
	HasQuota bool
	// RetryAfter is the response's Retry-After, when HasRetryAfter.
	RetryAfter    time.Duration
	HasRetryAfter bool
}

// Run sends plan to target, starting at start on clock, and returns every exchange in
// the order they were due. It sends nothing beyond the plan and the retries that
// HonorRetryAfter asks for, and returns once every response has come back or timed out.
// When ctx is done it stops sending, waits for the requests in flight, and returns what
// it has with ctx's error.
func Run(ctx context.Context, plan Plan, target Target, clock Clock, start time.Time) ([]Exchange, error) {
	s := &sender{
		target:  target,
		clock:   clock,
		start:   start,
		slots:   make(chan struct{}, max(target.Concurrency, 1)),
		clients: map[string]*http.Client{},
		dialers: map[string]*warmDialer{},
		refused: map[int]bool{},
	}
	for _, c := range target.RefusedCodes {
		s.refused[c] = true
	}
	s.keyIndex = make(map[string]int, len(plan.Keys))
	for i, k := range plan.Keys {
		s.keyIndex[k] = i
	}
	// Every planned exchange is in place before the first goroutine starts: senders then
	// only touch the slice under mu (a retry appends to it), and this loop never writes it.
	s.exchanges = make([]Exchange, len(plan.Requests), len(plan.Requests)*2)
	for i, r := range plan.Requests {
		s.exchanges[i] = Exchange{Key: r.Key, Cost: r.Cost, Due: r.At, RetryOf: -1, Tag: s.tag(i)}
	}
	ran := make(chan struct{})
	defer close(ran)
	if err := s.warm(ctx, plan, ran); err != nil {
		return nil, err
	}
	var err error
	sent := len(plan.Requests)
	for i, r := range plan.Requests {
		// The slot is taken before the wait, so that when every slot is busy the request
		// goes as soon as one frees, and the clock never runs ahead of a request that
		// could not be sent yet.
		if err = s.acquire(ctx); err != nil {
			sent = i
			break
		}
		if err = clock.SleepUntil(ctx, start.Add(r.At)); err != nil {
			<-s.slots
			sent = i
			break
		}
		s.wg.Add(1)
		go s.send(ctx, i)
	}
	s.wg.Wait()
	// Stopped early: the planned exchanges never sent go; the retries, appended after the
	// plan, each retry a planned exchange that was sent, so their RetryOf stays valid.
	s.exchanges = append(s.exchanges[:sent], s.exchanges[len(plan.Requests):]...)
	for _, c := range s.clients {
		c.CloseIdleConnections()
	}
	for _, d := range s.dialers {
		d.close()
	}
	return s.exchanges, err
}

type sender struct {
	target   Target
	clock    Clock
	start    time.Time
	slots    chan struct{}
	keyIndex map[string]int
	refused  map[int]bool
	wg       sync.WaitGroup

	mu        sync.Mutex
	exchanges []Exchange
	clients   map[string]*http.Client
	dialers   map[string]*warmDialer
}

// tag is the tag of the exchange created i-th (from 0), "" when the run sends none; it
// is fixed when the exchange is made, so that it names the request whatever becomes of
// its place.
func (s *sender) tag(i int) string {
	if s.target.Tag == "" {
		return ""
	}
	return requestTag(s.target.Tag, i+1)
}

func (s *sender) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send makes exchange i's request, holding one slot, and schedules its retry.
func (s *sender) send(ctx context.Context, i int) {
	defer s.wg.Done()
	s.mu.Lock()
	x := s.exchanges[i]
	s.mu.Unlock()
	s.do(ctx, &x)
	<-s.slots
	s.mu.Lock()
	s.exchanges[i] = x
	retry := s.target.HonorRetryAfter && !x.Retry && x.HasRetryAfter && s.refused[x.Status] && x.RetryAfter <= s.target.MaxRetryWait
	var j int
	if retry {
		j = len(s.exchanges)
		s.exchanges = append(s.exchanges, Exchange{Key: x.Key, Cost: x.Cost, Retry: true, RetryOf: i, Due: x.Received + x.RetryAfter, Tag: s.tag(j)})
	}
	s.mu.Unlock()
	if !retry {
		return
	}
	// The retry goes when Retry-After says, counted from the refusal's arrival.
	if s.clock.SleepUntil(ctx, s.start.Add(x.Received+x.RetryAfter)) != nil || s.acquire(ctx) != nil {
		s.mu.Lock()
		s.exchanges[j].Unsent = true
		s.mu.Unlock()
		return
	}
	if ctx.Err() != nil {
		<-s.slots
		s.mu.Lock()
		s.exchanges[j].Unsent = true
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.send(ctx, j)
}

// do sends x's request and fills in what happened.
func (s *sender) do(ctx context.Context, x *Exchange) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.target.URL, nil)
	if err != nil {
		x.Err = err.Error()
		return
	}
	if s.target.KeyHeader != "" {
		req.Header.Set(s.target.KeyHeader, x.Key)
	}
	if s.target.CostHeader != "" {
		req.Header.Set(s.target.CostHeader, strconv.FormatInt(x.Cost, 10))
	}
	if x.Tag != "" {
		req.Header.Set(TagHeader, x.Tag)
	}
	client := s.client(x.Key)
	x.Sent = s.clock.Now().Sub(s.start)
	resp, err := client.Do(req)
	x.Received = s.clock.Now().Sub(s.start)
	if err != nil {
		x.Err = err.Error()
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	x.Status = resp.StatusCode
	at := s.start.Add(x.Received)
	x.Quota, x.HasQuota = response.ParseQuota(resp.Header, at)
	if v := resp.Header.Get("Retry-After"); v != "" {
		x.RetryAfter, x.HasRetryAfter = response.ParseRetryAfter(v, at)
	}
}

// client returns the HTTP client for key: one shared client, or one per key bound to
// the key's source address.
func (s *sender) client(key string) *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientLocked(s.clientName(key))
}

func (s *sender) clientName(key string) string {
	if s.target.KeyAddrs {
		return key
	}
	return ""
}

func (s *sender) clientLocked(name string) *http.Client {
	if c, ok := s.clients[name]; ok {
		return c
	}
	rt := s.target.Transport
	if rt == nil {
		d := &warmDialer{dialer: net.Dialer{Timeout: s.target.Timeout}}
		if s.target.KeyAddrs {
			d.dialer.LocalAddr = &net.TCPAddr{IP: KeyAddr(s.keyIndex[name]).AsSlice()}
		}
		s.dialers[name] = d
		rt = &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConns:        0,
			MaxIdleConnsPerHost: max(s.target.Concurrency, 2),
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		}
	}
	c := &http.Client{Transport: rt, Timeout: s.target.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s.clients[name] = c
	return c
}

// A burst is warmSpan or less of requests of one client. Connections for it are opened
// warmLead before it is due, and a connection opened ahead stays usable unused for
// warmLife (servers drop a connection that sends nothing for a few seconds).
const (
	warmSpan = 100 * time.Millisecond
	warmLead = 300 * time.Millisecond
	warmLife = 3 * time.Second
)

// warm arranges for TCP connections to be open before each burst of the plan (as many as
// the burst has requests, up to Concurrency): a burst then goes out on open connections
// instead of waiting for a hundred handshakes, which on a busy machine can take longer
// than the gap a boundary schedule straddles. It sends no request. It opens one
// connection at once, so that a target that cannot be reached fails the probe before
// anything is sent; the rest are opened from goroutines that end with ctx or the run.
func (s *sender) warm(ctx context.Context, plan Plan, done <-chan struct{}) error {
	if s.target.Transport != nil {
		return nil
	}
	u, err := url.Parse(s.target.URL)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	due := map[string][]time.Duration{}
	var names []string
	for _, r := range plan.Requests {
		name := s.clientName(r.Key)
		if due[name] == nil {
			names = append(names, name)
		}
		due[name] = append(due[name], r.At)
	}
	dialer := func(name string) *warmDialer {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.clientLocked(name)
		return s.dialers[name]
	}
	if err := dialer(names[0]).open(ctx, addr, 1); err != nil {
		return fmt.Errorf("connecting to %s: %w", addr, err)
	}
	for _, name := range names {
		wd := dialer(name)
		times := due[name]
		for lo := 0; lo < len(times); {
			hi := lo
			for hi < len(times) && times[hi]-times[lo] < warmSpan {
				hi++
			}
			if n := min(hi-lo, cap(s.slots)); n > 1 {
				at := s.start.Add(times[lo] - warmLead)
				go func() {
					if s.clock.SleepUntil(ctx, at) != nil {
						return
					}
					select {
					case <-done:
					default:
						wd.open(ctx, addr, n)
					}
				}()
			}
			lo = hi
		}
	}
	return nil
}

// warmDialer dials TCP connections, handing out first those opened ahead of time.
type warmDialer struct {
	dialer net.Dialer
	mu     sync.Mutex
	ready  []warmConn
	closed bool
}

type warmConn struct {
	conn   net.Conn
	opened time.Time
}

func (w *warmDialer) open(ctx context.Context, addr string, n int) error {
	for range n {
		c, err := w.dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		w.mu.Lock()
		if w.closed {
			c.Close()
		} else {
			w.ready = append(w.ready, warmConn{c, time.Now()})
		}
		w.mu.Unlock()
	}
	return nil
}

// DialContext returns a connection opened ahead of time when one is still fresh, else
// dials.
func (w *warmDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	w.mu.Lock()
	for len(w.ready) > 0 {
		c := w.ready[len(w.ready)-1]
		w.ready = w.ready[:len(w.ready)-1]
		if time.Since(c.opened) < warmLife {
			w.mu.Unlock()
			return c.conn, nil
		}
		c.conn.Close()
	}
	w.mu.Unlock()
	return w.dialer.DialContext(ctx, network, addr)
}

// close closes the connections never used.
func (w *warmDialer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.ready {
		c.conn.Close()
	}
	w.ready, w.closed = nil, true
}

// String describes how the target tells keys apart.
func (t Target) String() string {
	switch {
	case t.KeyHeader != "":
		return fmt.Sprintf("key in header %s", t.KeyHeader)
	case t.KeyAddrs:
		return "one source address per key from 127.0.0.2"
	}
	return "no key sent"
}
