// Package server puts one rate-limit policy on real HTTP: the face of `rlsim serve`, so
// that curl, a load tool or a client SDK can be tried against the exact limiter and the
// exact 429 the simulations use. It is the one place in rlsim that reads the wall clock,
// and it reads it through an injected function so tests can drive time.
package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
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
	// MaxKeys bounds the distinct keys held (0: DefaultMaxKeys). Keys beyond it share
	// one overflow key, so a client inventing keys cannot grow memory without bound; it
	// is limited together with every other newcomer instead.
	MaxKeys int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// DefaultMaxKeys is the distinct keys a Handler holds unless told otherwise.
const DefaultMaxKeys = 1 << 20

// maxKeyBytes bounds the part of a header value used as a key.
const maxKeyBytes = 256

// ParseKey checks a key specification of Config.Key.
func ParseKey(spec string) error {
	switch {
	case spec == "ip" || spec == "global":
		return nil
	case strings.HasPrefix(spec, "header:"):
		name := strings.TrimPrefix(spec, "header:")
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return fmt.Errorf("header:NAME needs a header name, got %q", spec)
		}
		return nil
	}
	return fmt.Errorf("unknown key %q (want ip, global or header:NAME)", spec)
}

// Handler is an http.Handler that decides every request against the policy before
// anything else, answers a refusal with the response package's 429, and answers an
// admitted request with 200 and the rate-limit headers.
type Handler struct {
	cfg    Config
	header string

	mu   sync.Mutex
	ids  map[string]uint32
	last int64 // the latest time passed to the limiter, which must not go back
}

// New returns a Handler for cfg; cfg.Key must pass ParseKey.
func New(cfg Config) (*Handler, error) {
	if err := ParseKey(cfg.Key); err != nil {
		return nil, err
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, ids: map[string]uint32{}}
	if name, ok := strings.CutPrefix(cfg.Key, "header:"); ok {
		h.header = http.CanonicalHeaderKey(name)
	}
	return h, nil
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

// decide runs the limiter for r under the lock.
func (h *Handler) decide(r *http.Request) (algorithms.Decision, time.Time) {
	key := h.keyOf(r)
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.ids[key]
	if !ok {
		if len(h.ids) >= h.cfg.MaxKeys {
			key = "overflow"
			id, ok = h.ids[key]
		}
		if !ok {
			id = uint32(len(h.ids))
			h.ids[key] = id
		}
	}
	now := h.cfg.Now()
	// The wall clock can step back (NTP); the limiters need time that never does.
	ns := max(now.UnixNano(), h.last)
	h.last = ns
	return h.cfg.Limiter.Allow(id, ns, 1), now
}

// ServeHTTP implements http.Handler. The request's body is never read: a refusal costs
// the limiter's decision and a short write, and an admitted request is answered at once.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d, now := h.decide(r)
	resp := response.For(d, h.cfg.Policy, h.cfg.Headers)
	if h.cfg.RetryAfterDate {
		resp.RetryAfterDate(now)
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if !d.Allowed {
		w.WriteHeader(resp.Status)
		w.Write(resp.Body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	body, _ := json.Marshal(struct {
		OK        bool  `json:"ok"`
		Remaining int64 `json:"remaining"`
	}{true, d.Remaining})
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}

// Keys is the number of distinct keys held.
func (h *Handler) Keys() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// NewHTTPServer wraps h with the limits a server facing unknown clients needs: headers
// of at most 16 KiB (larger ones get 431 from net/http before h runs), and timeouts so
// that slow or idle connections cannot pile up.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		MaxHeaderBytes:    16 << 10,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
}
