// Package server puts one rate-limit policy on real HTTP: the face of `rlsim serve`, so
// that curl, a load tool or a client SDK can be tried against the exact limiter and the
// exact 429 the simulations use. It is one of the few places in rlsim that read the wall
// clock, and it reads it through an injected function so tests can drive time.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
)

// Config is the policy a Handler enforces and how it keys requests.
type Config struct {
	Limiter algorithms.Limiter
	Policy  response.Policy
	Headers response.Headers
	// RetryAfterDate sends Retry-After as an HTTP-date instead of seconds.
	RetryAfterDate bool
	// Key names what requests are limited by: "ip" (the peer address), "global" (one
	// key for everything) or "header:NAME" (the value of a request header; requests
	// without it share one key).
	Key string
	// CostHeader, when set, names a request header holding the request's cost, a whole
	// number from 1 to MaxCost (absent: 1; anything else: 400).
	CostHeader string
	// MaxKeys bounds the distinct keys held (0: DefaultMaxKeys). Keys whose state is back
	// to a fresh key's are evicted, which changes no decision; when MaxKeys keys all still
	// hold state, a new key gets 503 with the time until one is idle (see keyTable).
	MaxKeys int
	// MaxDelay bounds how long a queueing limiter (the leaky bucket) holds an admitted
	// request before answering it (0: DefaultMaxDelay). A request that would wait longer
	// is refused with 429 instead, and changes nothing in the queue.
	MaxDelay time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Wait holds an admitted request for d, returning early with false when ctx is done
	// (nil: a timer). Tests replace it to see the delays without sleeping.
	Wait func(ctx context.Context, d time.Duration) bool
}

// DefaultMaxKeys is the distinct keys a Handler holds unless told otherwise.
const DefaultMaxKeys = 1 << 20

// DefaultMaxDelay is how long a leaky-bucket Handler holds a request unless told otherwise.
const DefaultMaxDelay = 5 * time.Second

// MaxCost bounds the cost a CostHeader may carry.
const MaxCost = 1 << 30

// maxKeyBytes bounds the part of a header value used as a key.
const maxKeyBytes = 256

// ParseKey checks a key specification of Config.Key.
func ParseKey(spec string) error {
	switch {
	case spec == "ip" || spec == "global":
		return nil
	case strings.HasPrefix(spec, "header:"):
		return ParseHeaderName(strings.TrimPrefix(spec, "header:"))
	}
	return fmt.Errorf("unknown key %q (want ip, global or header:NAME)", spec)
}

// ParseHeaderName checks a header name given on the command line.
func ParseHeaderName(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n:") {
		return fmt.Errorf("want a header name such as X-API-Key, got %q", name)
	}
	return nil
}

// Handler is an http.Handler that decides every request against the policy before
// anything else, answers a refusal with the response package's 429 (413 for a cost that
// can never pass), and answers an admitted request with 200 and the rate-limit headers,
// after the queueing delay when the limiter is a leaky bucket.
type Handler struct {
	cfg        Config
	header     string
	costHeader string
	// queue is set for the leaky bucket, whose Reset is the time until its queue is
	// empty: the delay the next admitted request of the key will wait.
	queue bool
	// idleSlack is added to a decision's Reset before the key counts as idle. The token
	// bucket keeps tokens as a float64 and, like x/time/rate, admits a deficit worth less
	// than a nanosecond of refill, so at Reset its bucket can sit a hair under full, and a
	// later Reset differs by a nanosecond from a fresh key's; a microsecond later it is
	// full. The other limiters' state is exactly a fresh key's at Reset.
	idleSlack int64

	mu   sync.Mutex
	keys *keyTable
	last int64 // the latest time passed to the limiter, which must not go back

	stopped context.Context // done once Stop is called
	stop    context.CancelFunc
}

// New returns a Handler for cfg; cfg.Key must pass ParseKey.
func New(cfg Config) (*Handler, error) {
	if err := ParseKey(cfg.Key); err != nil {
		return nil, err
	}
	if cfg.CostHeader != "" {
		if err := ParseHeaderName(cfg.CostHeader); err != nil {
			return nil, err
		}
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Wait == nil {
		cfg.Wait = wait
	}
	h := &Handler{cfg: cfg, keys: newKeyTable(cfg.MaxKeys)}
	h.stopped, h.stop = context.WithCancel(context.Background())
	_, h.queue = cfg.Limiter.(*algorithms.LeakyBucket)
	if _, ok := cfg.Limiter.(*algorithms.TokenBucket); ok {
		h.idleSlack = int64(time.Microsecond)
	}
	if name, ok := strings.CutPrefix(cfg.Key, "header:"); ok {
		h.header = http.CanonicalHeaderKey(name)
	}
	if cfg.CostHeader != "" {
		h.costHeader = http.CanonicalHeaderKey(cfg.CostHeader)
	}
	return h, nil
}

func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (h *Handler) keyOf(r *http.Request) string {
	switch {
	case h.header != "":
		v := r.Header.Get(h.header)
		if len(v) > maxKeyBytes {
			v = v[:maxKeyBytes]
		}
		return "h:" + v
	case h.cfg.Key == "ip":
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		return "ip:" + host
	}
	return "global"
}

func (h *Handler) costOf(r *http.Request) (int64, error) {
	if h.costHeader == "" {
		return 1, nil
	}
	v := r.Header.Get(h.costHeader)
	if v == "" {
		return 1, nil
	}
	c, err := strconv.ParseInt(v, 10, 64)
	if err != nil || c < 1 || c > MaxCost {
		return 0, fmt.Errorf("%s: want a whole number from 1 to %d, got %.40q", h.costHeader, MaxCost, v)
	}
	return c, nil
}

// verdict is one request's outcome: a limiter decision, or a table too full to hold its
// key (then full is set and retry says when a key will be idle).
type verdict struct {
	d     algorithms.Decision
	now   time.Time
	full  bool
	retry time.Duration
}

// decide runs the limiter for one request of key at the clock's time, under the lock.
func (h *Handler) decide(key string, cost int64) verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.cfg.Now()
	// The wall clock can step back (NTP); the limiters need time that never does.
	ns := max(now.UnixNano(), h.last)
	h.last = ns
	e, retry := h.keys.lookup(key, ns)
	if e == nil {
		return verdict{now: now, full: true, retry: time.Duration(retry)}
	}
	var d algorithms.Decision
	if h.queue {
		d = h.decideQueued(e, ns, cost)
	} else {
		d = h.cfg.Limiter.Allow(e.id, ns, cost)
	}
	h.keys.touch(e, satAdd(ns, satAdd(int64(d.Reset), h.idleSlack)))
	return verdict{d: d, now: now}
}

// decideQueued is the leaky bucket's decision with the queue cut at MaxDelay. The delay
// a request would wait is known before deciding it: the time until the key's queue is
// empty, which its last decision's Reset gave (e.idleAt). A request that would wait
// longer than MaxDelay is refused without touching the limiter, so it takes no place in
// the queue; its RetryAfter is when the wait will be short enough, and when the queue
// will also have room for it, whichever is later.
func (h *Handler) decideQueued(e *keyEntry, now, cost int64) algorithms.Decision {
	maxDelay := int64(h.cfg.MaxDelay)
	burst := h.cfg.Policy.EffectiveBurst()
	if delay := max(e.idleAt-now, 0); delay > maxDelay && cost <= burst {
		room := h.spanOf(burst - cost) // the longest wait the queue itself allows this cost
		return algorithms.Decision{
			RetryAfter: time.Duration(delay - min(maxDelay, room)),
			Reset:      time.Duration(delay),
		}
	}
	d := h.cfg.Limiter.Allow(e.id, now, cost)
	// Remaining counts the unit requests that would pass now: each waits one unit's
	// span longer than the one before, starting at the queue's new length (Reset).
	if wait := int64(d.Reset); wait > maxDelay {
		d.Remaining = 0
	} else {
		d.Remaining = min(d.Remaining, h.unitsWithin(maxDelay-wait)+1)
	}
	return d
}

// spanOf is the time n units take to drain, Window·n/Limit, rounded down.
func (h *Handler) spanOf(n int64) int64 {
	return mulDiv(uint64(n), uint64(h.cfg.Policy.Window), uint64(h.cfg.Policy.Limit))
}

// unitsWithin is how many units drain within d: d·Limit/Window, rounded down.
func (h *Handler) unitsWithin(d int64) int64 {
	return mulDiv(uint64(d), uint64(h.cfg.Policy.Limit), uint64(h.cfg.Policy.Window))
}

// mulDiv returns ⌊a·b/c⌋ for c > 0, saturating at MaxInt64.
func mulDiv(a, b, c uint64) int64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, c)
	return int64(min(q, math.MaxInt64))
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ServeHTTP implements http.Handler. The request's body is never read: a refusal costs
// the limiter's decision and a short write. An admitted request is answered at once, or
// after its queueing delay under a leaky bucket; if the client goes away meanwhile
// nothing is written, and if the server stops meanwhile it answers 503.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cost, err := h.costOf(r)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	v := h.decide(h.keyOf(r), cost)
	if v.full {
		write(w, response.Overloaded(v.retry))
		return
	}
	d := v.d
	resp := response.For(d, h.cfg.Policy, h.cfg.Headers)
	if h.cfg.RetryAfterDate {
		resp.RetryAfterDate(v.now)
	}
	if !d.Allowed {
		write(w, resp)
		return
	}
	if d.Delay > 0 && !h.hold(r.Context(), d.Delay) {
		if r.Context().Err() == nil { // the server is stopping, not the client gone
			w.Header().Set("Connection", "close")
			write(w, response.Overloaded(0))
		}
		return
	}
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set("Cache-Control", "no-store")
	body, _ := json.Marshal(struct {
		OK        bool  `json:"ok"`
		Remaining int64 `json:"remaining"`
	}{true, d.Remaining})
	resp.Body = append(body, '\n')
	write(w, resp)
}

// write sends r, its header names spelled as the specifications do ("RateLimit", as
// rlsim headers prints them; a client reads them case-insensitively).
func write(w http.ResponseWriter, r response.Response) {
	for k, v := range r.Header {
		w.Header()[response.DisplayName(k)] = v
	}
	w.WriteHeader(r.Status)
	w.Write(r.Body)
}

func writeProblem(w http.ResponseWriter, status int, detail string) {
	body, _ := json.Marshal(response.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// hold waits d for an admitted request of a queueing limiter; false when the client went
// away or the Handler was stopped first.
func (h *Handler) hold(ctx context.Context, d time.Duration) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.stopped, cancel)()
	return h.cfg.Wait(ctx, d)
}

// Stop answers every request held in the leaky bucket's queue at once with 503 (the
// server is going away), and so every one held later; it is how a shutdown avoids
// waiting out the queue.
func (h *Handler) Stop() { h.stop() }

// Keys is the number of distinct keys held.
func (h *Handler) Keys() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.keys.byName)
}

// Evicted is the number of idle keys evicted so far.
func (h *Handler) Evicted() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keys.evicted
}
