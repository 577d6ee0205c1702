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
	policy policyFlags
	addr   string
	key    string
	// ready, when set, is called with the bound address once the server accepts
	// connections and listens for signals (tests use it to find an OS-chosen port).
	ready func(addr string)
	// now replaces the wall clock (tests).
	now func() time.Time
}

func newServeCmd(g *globalOptions, streams IO) *cobra.Command {
	return newServeCmdFor(&serveOptions{globalOptions: g}, streams)
}

// newServeCmdFor builds the command around o, which its flags fill.
func newServeCmdFor(o *serveOptions, streams IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Put a policy on a real HTTP port (loopback by default) to try clients against it",
		Long: `serve answers every HTTP request on --addr with the policy's decision: 200 with the
rate-limit headers when admitted, the 429 of ` + "`rlsim headers`" + ` when refused. The limit is
checked before anything else and request bodies are never read. It uses the wall clock
(the simulations never do) and stops cleanly on SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runServe(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	o.policy.register(f)
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; keep it on loopback unless you mean otherwise)")
	f.StringVar(&o.key, "key", "ip", "what requests are limited by: ip, global or header:NAME (for example header:X-API-Key)")
	return c
}

func runServe(ctx context.Context, o *serveOptions, streams IO) error {
	lim, pol, which, err := o.policy.build()
	if err != nil {
		return err
	}
	if err := server.ParseKey(o.key); err != nil {
		return usagef("--key: %v", err)
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return usagef("--addr: want host:port, got %q", o.addr)
	}
	h, err := server.New(server.Config{
		Limiter: lim, Policy: pol, Headers: which, RetryAfterDate: o.policy.date, Key: o.key, Now: o.now,
	})
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	srv := server.NewHTTPServer(h)
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
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(streams.Err, "rlsim serve: stopped after %d key(s)\n", h.Keys())
	return nil
}
