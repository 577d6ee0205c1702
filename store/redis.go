package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// DefaultTimeout bounds every round trip to a Redis server, connecting included, unless
// Options.Timeout (--store-timeout) says otherwise, so a server that stalls gives an error
// within a few seconds instead of a hang. A server that is busy but alive can take
// longer than that (a CPU-starved machine, a run of many keys): give it more.
const DefaultTimeout = 2 * time.Second

// Redis is the store face that runs the embedded Lua scripts on a Redis server: a real one
// (NewRedis) or an embedded miniredis (NewMiniredis) whose clock follows the virtual time.
type Redis struct {
	client *redis.Client
	mini   *miniredis.Miniredis // nil for a real server
	name   string

	// mu guards last, which the embedded server's clock command also moves.
	mu   sync.Mutex
	last int64 // the store's virtual time (ns): miniredis's clock, a real server's SetNow
	// explicitClock sends miniredis the store's time as ARGV[1], as a real server is
	// sent it, instead of leaving the script to read TIME (tests prove the two alike).
	explicitClock bool
	// timeout bounds every round trip; watch follows them (Options).
	timeout time.Duration
	watch   *Watch

	faceCounters
	laneState
	loaded   map[*Script]bool // scripts EvalBatch has loaded on the server
	reloaded bool             // EvalBatch has just reloaded them after NOSCRIPT
	// loadEvery makes EvalBatch load the batch's scripts in every pipeline (miniredis).
	loadEvery bool
	// ttls counts the embedded server's TTLs in virtual time in place of FastForward
	// (ttlClock), for a face whose every call comes with before and after (UserFace);
	// nil: FastForward.
	ttls *ttlClock
}

var _ Store = (*Redis)(nil)

// NewRedis connects to the Redis server at url ("redis://127.0.0.1:6379/0") with the
// default Options (NewRedisWith).
func NewRedis(url string) (*Redis, error) { return NewRedisWith(url, Options{}) }

// NewRedisWith connects to the Redis server at url (see ParseURL) and checks it answers
// PING within o's timeout (else the error wraps ErrUnavailable). A later round trip
// without a reply within the timeout wraps ErrTimeout; a connection lost, ErrUnavailable.
// Nothing is ever sent twice: a script call without a reply may have run on the server,
// and sending it again could count a request twice (see Redis.wrap).
func NewRedisWith(url string, o Options) (*Redis, error) {
	opt, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	timeout := o.timeout()
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = timeout, timeout, timeout
	opt.MaxRetries = -1 // never resend: a script call may have run without its reply
	opt.DialerRetries = 1
	quietOnce.Do(func() { redis.SetLogger(quietLogger{}) })
	opt.PoolSize = poolSize
	opt.DisableIdentity = true
	r := &Redis{client: redis.NewClient(opt), name: "redis", timeout: timeout, watch: o.Watch}
	r.SetLanes(DefaultLanes)
	o.Watch.connected("redis at " + opt.Addr)
	ctx, cancel := r.ctx()
	defer cancel()
	if err := r.client.Ping(ctx).Err(); err != nil {
		r.client.Close()
		// A server that does not answer its first PING is as good as unreachable.
		if err = r.wrap(fmt.Errorf("redis at %s: %w", opt.Addr, err)); !errors.Is(err, ErrUnavailable) {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return nil, err
	}
	return r, nil
}

// quietLogger drops go-redis's own log lines: rlsim writes only to the streams a command
// was given, and every failure reaches the caller as an error anyway.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// NewMiniredis starts an embedded miniredis on a loopback port and connects to it, with
// the default Options (NewMiniredisWith).
func NewMiniredis() (*Redis, error) { return NewMiniredisWith(Options{}) }

// NewMiniredisWith starts an embedded miniredis on a loopback port and connects to it. Its
// clock stays at the Unix epoch until SetNow moves it.
func NewMiniredisWith(o Options) (*Redis, error) {
	m := miniredis.NewMiniRedis()
	// On a busy machine every ephemeral port can be taken for a moment: ask again.
	err := m.StartAddr("127.0.0.1:0")
	for tries := 1; err != nil && tries < 20 && (errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EADDRNOTAVAIL)); tries++ {
		err = m.StartAddr("127.0.0.1:0")
	}
	if err != nil {
		return nil, fmt.Errorf("starting miniredis: %w", err)
	}
	timeout := o.timeout()
	r := &Redis{
		client: redis.NewClient(&redis.Options{Addr: m.Addr(), DialTimeout: timeout, ReadTimeout: timeout,
			WriteTimeout: timeout, MaxRetries: -1, PoolSize: poolSize, DisableIdentity: true}),
		mini:      m,
		name:      "miniredis",
		loadEvery: true,
		timeout:   timeout,
		watch:     o.Watch,
	}
	r.SetLanes(DefaultLanes)
	if err := r.registerClock(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Client is the connection, for callers that measure the server (rlsim memory).
func (r *Redis) Client() *redis.Client { return r.client }

// Name returns "redis" or "miniredis".
func (r *Redis) Name() string { return r.name }

// wrap marks an error of the server: a round trip without a reply within the face's
// timeout wraps ErrTimeout — a server that is slow, or stalled, but was there — and a
// connection that failed otherwise (refused, closed by the server) ErrUnavailable, a
// server that is not; a reply that is an error (a script's, WRONGTYPE) stays as it is.
// Neither is sent again: the calls of a round trip without a reply may have run.
func (r *Redis) wrap(err error) error {
	if err == nil {
		return nil
	}
	var nerr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return fmt.Errorf("%w (%w within %s, the store's timeout: a slow server may need more, --store-timeout)", err, ErrTimeout, r.timeout)
	case errors.As(err, &nerr), errors.Is(err, redis.ErrClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// ctx is the context of one round trip: its deadline the face's timeout; the watch counts
// it on its way until cancel.
func (r *Redis) ctx() (context.Context, context.CancelFunc) {
	return r.ctxFor(r.timeout)
}

func (r *Redis) ctxFor(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	end := r.watch.Begin()
	return ctx, func() {
		end()
		cancel()
	}
}

// Timeout is the face's round-trip deadline.
func (r *Redis) Timeout() time.Duration { return r.timeout }

// Eval runs s by EVALSHA, loading it with EVAL the first time.
func (r *Redis) Eval(s *Script, keys []string, args ...int64) ([]int64, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	v, err := s.lua.Run(ctx, r.client, keys, r.argv(args, r.pipeClock())...).Int64Slice()
	if err != nil {
		return nil, r.wrap(fmt.Errorf("script %s: %w", s.Name, err))
	}
	if !s.command {
		r.calls.Add(1)
	}
	r.singles.Add(1)
	return v, nil
}

// argv is a script's arguments as sent, the store's virtual time being now (ns). A now
// argument asking for the store's clock goes to miniredis empty, so the script reads TIME
// (the virtual clock, in µs), and to a real server as now in µs, its TIME being its wall
// clock; either way the ns past that µs go as the last argument. On a real server keep
// grows by WallMargin, as its TTLs count wall time.
func (r *Redis) argv(args []int64, now int64) []any {
	argv := make([]any, len(args))
	store := len(args) > argNow && args[argNow] == storeTime
	for i, a := range args {
		switch {
		case i == argNow && store && r.mini != nil && !r.explicitClock:
			argv[i] = ""
		case i == argNow && store:
			argv[i] = strconv.FormatInt(floorDiv(now, 1000), 10)
		case i == argSub && store:
			argv[i] = r.args.text(now - floorDiv(now, 1000)*1000)
		case i == argKeep && r.mini == nil:
			argv[i] = r.args.text(a + WallMargin.Milliseconds())
		default:
			argv[i] = r.args.text(a)
		}
	}
	return argv
}

// wireArgs appends to into a script's arguments as a real server is sent them at the
// store's virtual time now (ns): those of argv, as integers.
func (r *Redis) wireArgs(into []int64, args []int64, now int64) []int64 {
	store := len(args) > argNow && args[argNow] == storeTime
	for i, a := range args {
		switch {
		case i == argNow && store:
			a = floorDiv(now, 1000)
		case i == argSub && store:
			a = now - floorDiv(now, 1000)*1000
		case i == argKeep:
			a += WallMargin.Milliseconds()
		}
		into = append(into, a)
	}
	return into
}

// SetNow moves the store's virtual time to now: an embedded miniredis's clock (TIME, and
// TTLs by fast-forwarding them); a real server keeps its own clock and is sent this time
// where a script asks for the store's.
func (r *Redis) SetNow(now int64) error {
	if r.mini == nil {
		r.mu.Lock()
		r.last = max(r.last, now)
		r.mu.Unlock()
		return nil
	}
	r.advance(now)
	return nil
}

// advance moves the embedded server's clock forward to now (ns); an earlier time leaves it.
func (r *Redis) advance(now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := now - r.last; d > 0 && r.last != 0 {
		if r.ttls != nil {
			r.ttls.expire(now)
		} else {
			r.mini.FastForward(time.Duration(d))
		}
	}
	if now > r.last {
		r.last = now
		r.mini.SetTime(time.Unix(0, now))
	}
}

// syncTTLs sets the embedded server's TTLs exact at the store's time, for a reader that
// goes round the face's calls (SCAN, PTTL); nothing to do under FastForward.
func (r *Redis) syncTTLs() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ttls != nil {
		r.ttls.sync(r.last)
	}
}

// Close closes the connection and stops an embedded server.
func (r *Redis) Close() error {
	r.closeWires()
	err := r.client.Close()
	if r.mini != nil {
		r.mini.Close()
	}
	return err
}
