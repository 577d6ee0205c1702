package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server is the http.Server of `rlsim serve` with the limits a server facing unknown
// clients needs, and a shutdown that does not wait for them: net/http's Shutdown waits
// for every connection that has begun a request, so one client that sends half a request
// (or a bare TCP connection, for its first five seconds) holds a stopping server up.
type Server struct {
	srv     *http.Server
	handler *Handler

	mu    sync.Mutex
	conns map[net.Conn]*trackedConn
}

// trackedConn is one open connection. It is busy from the moment the handler starts on a
// request until net/http has written the response out and the connection is idle again.
type trackedConn struct {
	busy atomic.Bool
}

type connKey struct{}

// MaxHeaderBytes is the most a request head may hold — the request line, the header
// fields and the blank line that ends them — before the server answers 431 Request Header
// Fields Too Large, without running the limiter: 16 KiB.
const MaxHeaderBytes = 16 << 10

// headSlack is what net/http reads beyond http.Server.MaxHeaderBytes before it answers
// 431 (its bufio slop, net/http's initialReadLimitSize): the server's setting is that much
// below MaxHeaderBytes, so the 431 starts where MaxHeaderBytes says.
const headSlack = 4096

// NewServer wraps h: request heads of at most MaxHeaderBytes (larger ones get 431 from
// net/http before h runs), and timeouts so that slow or idle connections cannot pile up;
// the write timeout leaves room for h's longest queueing delay.
func NewServer(h *Handler) *Server {
	s := &Server{handler: h, conns: map[net.Conn]*trackedConn{}}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		MaxHeaderBytes:    MaxHeaderBytes - headSlack,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10*time.Second + h.cfg.MaxDelay,
		IdleTimeout:       60 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			s.mu.Lock()
			defer s.mu.Unlock()
			tc := &trackedConn{}
			s.conns[c] = tc
			return context.WithValue(ctx, connKey{}, tc)
		},
		ConnState: func(c net.Conn, state http.ConnState) {
			s.mu.Lock()
			defer s.mu.Unlock()
			switch state {
			case http.StateIdle:
				if tc := s.conns[c]; tc != nil {
					tc.busy.Store(false)
				}
			case http.StateClosed, http.StateHijacked:
				delete(s.conns, c)
			}
		},
	}
	return s
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if tc, ok := r.Context().Value(connKey{}).(*trackedConn); ok {
		tc.busy.Store(true)
	}
	s.handler.ServeHTTP(w, r)
}

// Serve accepts connections on ln until Shutdown or Close; it returns
// http.ErrServerClosed after either.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops the server without waiting for clients: it stops accepting, answers the
// requests held in a leaky bucket's queue with 503, closes at once every connection that
// is not being answered (idle, fresh, or in the middle of sending a request), and lets
// the responses under way finish their short write; then it closes what is left. If
// responses are still under way when ctx is done, it closes their connections too and
// returns ctx's error. closed counts the connections it closed, idle ones included.
//
// net/http's own Shutdown would wait for every connection that has begun a request, and
// for half a second after a malformed one (it lingers before closing so the client reads
// the 400); the connections closed here are not waited for.
func (s *Server) Shutdown(ctx context.Context) (closed int, err error) {
	s.handler.Stop()
	go s.srv.Shutdown(context.Background()) // closes the listeners, ends keep-alives
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		// Sweep until no response is under way: a connection accepted just before the
		// listener closed may register after a sweep.
		n, busy := s.closeIdle()
		closed += n
		if busy == 0 {
			return closed, s.Close()
		}
		select {
		case <-ctx.Done():
			s.Close()
			return closed + busy, ctx.Err()
		case <-tick.C:
		}
	}
}

// closeIdle closes every connection not being answered; it returns how many it closed
// and how many are being answered.
func (s *Server) closeIdle() (closed, busy int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, tc := range s.conns {
		if tc.busy.Load() {
			busy++
			continue
		}
		c.Close()
		delete(s.conns, c)
		closed++
	}
	return closed, busy
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error {
	s.handler.Stop()
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
