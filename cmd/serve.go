package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/server"
)

type serveOptions struct {
	*globalOptions
	policy     policyFlags
	addr       string
	key        string
	costHeader string
	maxKeys    int
	maxDelay   time.Duration
	// grace is how long a stopping server lets responses under way finish (zero:
	// defaultServeGrace).
	grace time.Duration
	// ready, when set, is called with the bound address once the server accepts
	// connections and listens for signals (tests use it to find an OS-chosen port).
	ready func(addr string)
	// now replaces the wall clock and wait the leaky bucket's hold (tests).
	now  func() time.Time
	wait func(context.Context, time.Duration) bool
}

// defaultServeGrace bounds a shutdown: responses under way are a few microseconds of
// work, so only a client that stops reading its response can use it up.
const defaultServeGrace = 500 * time.Millisecond

// maxServeDelay bounds --max-delay: a response held longer than this is better refused.
const maxServeDelay = time.Hour

func newServeCmd(g *globalOptions, streams IO) *cobra.Command {
	return newServeCmdFor(&serveOptions{globalOptions: g}, streams)
}

// newServeCmdFor builds the command around o, which its flags fill.
func newServeCmdFor(o *serveOptions, streams IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Put a policy on a real HTTP port (loopback by default) to try clients against it",
		Long: `serve answers every HTTP request on --addr with the policy's decision: 200 with the
rate-limit headers when admitted, the 429 of ` + "`rlsim headers`" + ` when refused (413 when the
request's cost can never pass). The limit is checked before anything else and request bodies
are never read. Under --algorithm leaky-bucket an admitted request is answered after its
place in the queue comes up, and a request that would wait longer than --max-delay is
refused. It uses the wall clock (the simulations never do). SIGINT or SIGTERM stops it at
once, closing idle and half-sent connections and answering queued requests with 503; a
second signal stops it without waiting for anything.`,
		Example: `  # GCRA at 5 per 10 s per API key on 127.0.0.1:8080; try it with
  #   curl -i -H 'X-API-Key: k1' http://127.0.0.1:8080/
  rlsim serve --limit 5 --window 10s --algorithm gcra --key header:X-API-Key

  # a leaky bucket that holds a request up to 2 s for its turn, on another port
  rlsim serve --addr 127.0.0.1:9090 --algorithm leaky-bucket --max-delay 2s`,
		Args: argCount(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			return runServe(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	o.policy.register(f)
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; keep it on loopback unless you mean otherwise)")
	f.StringVar(&o.key, "key", "ip", "what requests are limited by: ip, global or header:NAME (for example header:X-API-Key)")
	f.StringVar(&o.costHeader, "cost-header", "", "header holding a request's cost, 1 to 2^30 (absent: 1)")
	f.IntVar(&o.maxKeys, "max-keys", server.DefaultMaxKeys, "most keys held; idle keys are evicted, and a new key finding only busy ones gets 503")
	f.DurationVar(&o.maxDelay, "max-delay", server.DefaultMaxDelay, "leaky-bucket: longest a request waits its turn; one that would wait longer gets 429")
	return c
}

// signalError is a run stopped by a second signal; it exits 128 + the signal's number.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string { return fmt.Sprintf("stopped at once by a second %s", e.sig) }
func (e signalError) ExitCode() int { return 128 + int(e.sig) }

func runServe(ctx context.Context, o *serveOptions, streams IO) error {
	lim, pol, which, err := o.policy.build()
	if err != nil {
		return err
	}
	if err := server.ParseKey(o.key); err != nil {
		return usagef("--key: %v", err)
	}
	if o.costHeader != "" {
		if err := server.ParseHeaderName(o.costHeader); err != nil {
			return usagef("--cost-header: %v", err)
		}
	}
	if o.maxKeys < 1 {
		return usagef("--max-keys: must be at least 1, got %d", o.maxKeys)
	}
	if o.maxDelay <= 0 || o.maxDelay > maxServeDelay {
		return usagef("--max-delay: must be more than 0 and at most %s, got %s", maxServeDelay, o.maxDelay)
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return usagef("--addr: want host:port, got %q", o.addr)
	}
	h, err := server.New(server.Config{
		Limiter: lim, Policy: pol, Headers: which, RetryAfterDate: o.policy.date, Key: o.key,
		CostHeader: o.costHeader, MaxKeys: o.maxKeys, MaxDelay: o.maxDelay, Now: o.now, Wait: o.wait,
	})
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	srv := server.NewServer(h)
	fmt.Fprintf(streams.Err, "rlsim serve: %s %s on http://%s, key %s (Ctrl-C stops)\n", o.policy.algorithm, pol.Policy, ln.Addr(), o.key)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	select {
	case err := <-served:
		return fmt.Errorf("serving %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	case <-sigs:
	}

	grace := o.grace
	if grace <= 0 {
		grace = defaultServeGrace
	}
	shutdown, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	type result struct {
		closed int
		err    error
	}
	stopped := make(chan result, 1)
	go func() {
		n, err := srv.Shutdown(shutdown)
		stopped <- result{n, err}
	}()
	var r result
	select {
	case r = <-stopped:
	case sig := <-sigs:
		srv.Close()
		<-served
		return signalError{sig.(syscall.Signal)}
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	note := ""
	if r.err != nil {
		note = fmt.Sprintf("; responses not finished after %s were cut", grace)
	}
	fmt.Fprintf(streams.Err, "rlsim serve: stopped after %d key(s) held, %d idle key(s) evicted; closed %d open connection(s)%s\n",
		h.Keys(), h.Evicted(), r.closed, note)
	return nil
}
