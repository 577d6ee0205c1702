package external

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// Lua runs a user's Lua script (store.UserScript, which states the calling convention) as
// a limiter. Each limiter New builds gets a face of its own: an embedded miniredis, whose
// clock follows the virtual time of its calls so TIME and TTLs count virtual time, or a
// connection to the real server at RedisURL, whose clock and TTLs stay its own, with its
// keys under a prefix of their own, refused if anything is already there and deleted when
// it closes.
type Lua struct {
	Script *store.UserScript
	// RedisURL is the real server the script runs on; empty: an embedded miniredis.
	RedisURL string
	// Batch is how many calls a real server gets in one pipeline (0: DefaultLuaBatch).
	// miniredis takes one call at a time, its Lua being no faster in a pipeline.
	Batch int
	// Store is how each face talks to its server: the round-trip timeout and a watch.
	Store store.Options

	sessions atomic.Int64
	mu       sync.Mutex
	readTime string // the first request seen reading TIME on miniredis
	// crossSlot is the first call seen on miniredis touching a key in another Redis
	// Cluster slot than its KEYS[1]'s.
	crossSlot string
	stats     Rate
}

// Stats is how many decisions the script's limiters made and the wall time their calls
// took on the server, summed over the limiters (a fleet's shared store not included).
func (l *Lua) Stats() Rate {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Server names where the script runs, for messages: "the embedded miniredis" or "redis".
func (l *Lua) Server() string {
	if l.RedisURL == "" {
		return "the embedded miniredis"
	}
	return "redis"
}

// LuaGCPercent is the garbage collector's target (GOGC) while scripts run on the embedded
// miniredis: miniredis builds a Lua state of its own for every call, about 180 KB that is
// garbage as soon as the call returns, so at Go's default of 100 the collector takes about
// half the CPU of a decision (BenchmarkLuaEmbedded: 162–183 µs of CPU a decision at 100,
// 86–90 µs at 400). The heap the run keeps is small beside it.
const LuaGCPercent = 400

// RaiseGC sets the garbage collector's target to LuaGCPercent, unless GOGC is set in the
// environment or the target is already higher (or off), and returns the function that
// puts it back.
func RaiseGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(LuaGCPercent)
	if old < 0 || old > LuaGCPercent {
		debug.SetGCPercent(old)
	}
	return func() { debug.SetGCPercent(old) }
}

// DefaultLuaBatch is the pipeline a real server is sent.
const DefaultLuaBatch = 256

// NewLua loads the script at path, to run on the server at redisURL (empty: miniredis).
func NewLua(path, redisURL string) (*Lua, error) {
	s, err := store.LoadUserScript(path)
	if err != nil {
		return nil, err
	}
	return &Lua{Script: s, RedisURL: redisURL}, nil
}

// Name is the algorithm's name in reports: the script's file name without .lua.
func (l *Lua) Name() string { return l.Script.Name }

// Describe names the script for messages: "lua script examples/lua/x.lua".
func (l *Lua) Describe() string { return "lua script " + l.Script.Path }

// Check loads the script on a face once, so a syntax error or an unreachable server is
// reported before any run starts, and then holds it to rlsim's calling convention
// (CheckConvention).
func (l *Lua) Check() error {
	lim, err := l.New(algorithms.Policy{Limit: 1, Window: time.Second})
	if err != nil {
		return err
	}
	if err := lim.(Limiter).Close(); err != nil {
		return err
	}
	return l.CheckConvention()
}

// Warnings are what the script does that virtual time cannot reach: reading TIME (seen in
// its text, or on miniredis when it ran), and, on a real server, setting TTLs.
func (l *Lua) Warnings() []string {
	var out []string
	s := l.Script
	l.mu.Lock()
	seen, cross := l.readTime, l.crossSlot
	l.mu.Unlock()
	switch {
	case s.ReadsTime > 0 && l.RedisURL != "":
		out = append(out, fmt.Sprintf("%s:%d reads TIME, the server's wall clock, which virtual time cannot reach: its decisions follow the wall time of the run, not the scenario's; take now from ARGV[1]", s.Path, s.ReadsTime))
	case s.ReadsTime > 0 || seen != "":
		where := fmt.Sprintf(":%d", s.ReadsTime)
		if s.ReadsTime == 0 {
			where = " (" + seen + ")"
		}
		out = append(out, fmt.Sprintf("%s%s reads TIME: miniredis answers with the virtual clock, but a real Redis answers with its wall clock, which virtual time cannot reach; take now from ARGV[1] to be judged alike on both", s.Path, where))
	}
	if cross != "" {
		out = append(out, fmt.Sprintf("%s touches a key outside its KEYS[1]'s Redis Cluster hash slot (%s): on a Redis Cluster that call fails with CROSSSLOT; name every key from KEYS[1], whose client key in braces is its hash tag, so they share its slot", s.Path, cross))
	}
	if s.SetsTTL > 0 && l.RedisURL != "" {
		out = append(out, fmt.Sprintf("%s:%d sets a TTL: a real server counts it on its wall clock while the run moves in virtual time, so a key outlives its virtual lifetime (a 1m TTL spans as much virtual time as the run covers in a wall minute); its decisions can differ from miniredis's, which counts TTLs in virtual time", s.Path, s.SetsTTL))
	}
	return out
}

// New builds the script's limiter for p on a face of its own.
func (l *Lua) New(p algorithms.Policy) (algorithms.Limiter, error) {
	if err := store.CheckPolicy(p); err != nil {
		return nil, fmt.Errorf("%s: %w", l.Describe(), err)
	}
	n := l.sessions.Add(1)
	var (
		r      *store.Redis
		err    error
		prefix string
	)
	if l.RedisURL == "" {
		r, err = store.NewMiniredisWith(l.Store)
		prefix = "rlsim:" + l.Script.Name + ":"
	} else {
		r, err = store.NewRedisWith(l.RedisURL, l.Store)
		prefix = "rlsim:" + strconv.Itoa(os.Getpid()) + ":" + l.Script.Name + ":" + strconv.FormatInt(n, 10) + ":"
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Describe(), err)
	}
	lim := &luaLimiter{l: l, r: r, prefix: prefix, batch: 1}
	if l.RedisURL != "" {
		lim.batch = l.Batch
		if lim.batch <= 0 {
			lim.batch = DefaultLuaBatch
		}
		keys, err := r.Keys(prefix)
		if err == nil && len(keys) > 0 {
			err = fmt.Errorf("keys under %q already exist on the Redis server; refusing to touch them", prefix)
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", l.Describe(), err)
		}
		lim.owns = true
	}
	if lim.face, err = store.NewUserFace(r, l.Script, p); err != nil {
		lim.Close()
		return nil, fmt.Errorf("%s: %w", l.Describe(), err)
	}
	return lim, nil
}

// FleetStore is the script on a face of its own as a fleet's shared store: a fleet of the
// shared placement calls it for every decision (store.UserStore). A real server is
// reached at RedisURL; the fleet names its keys under its own prefix. A call whose script
// touches a key outside its KEYS[1]'s Redis Cluster slot is warned about (Warnings), or,
// when the fleet's store is a cluster moving slots (refuseCrossSlot), an error that ends
// the run.
func (l *Lua) FleetStore(p algorithms.Policy, refuseCrossSlot bool) (*store.UserStore, error) {
	var (
		r   *store.Redis
		err error
	)
	if l.RedisURL == "" {
		r, err = store.NewMiniredisWith(l.Store)
	} else {
		r, err = store.NewRedisWith(l.RedisURL, l.Store)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Describe(), err)
	}
	u, err := store.NewUserStore(r, l.Script, p)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", l.Describe(), err)
	}
	u.WatchSlots(refuseCrossSlot, l.sawCrossSlot)
	return u, nil
}

func (l *Lua) sawCrossSlot(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crossSlot == "" {
		l.crossSlot = what
	}
}

func (l *Lua) counted(decisions int, wall time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Decisions += int64(decisions)
	l.stats.Wall += wall
}

func (l *Lua) sawTime(r request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readTime == "" {
		l.readTime = "first at " + r.String()
	}
}

// luaLimiter is one limiter of a Lua factory.
type luaLimiter struct {
	l      *Lua
	r      *store.Redis
	face   *store.UserFace
	prefix string
	owns   bool // a real server: delete the prefix's keys on Close
	batch  int

	names   names
	keys    int
	sent    int64
	calls   []store.UserCall
	reqs    []request
	results []store.UserResult
	decided queue[algorithms.Decision]
	err     error
	closed  bool
}

var _ Limiter = (*luaLimiter)(nil)

func (x *luaLimiter) Name() string { return x.l.Script.Name }

func (x *luaLimiter) SetName(key uint32, name string) {
	if int(key) >= len(x.names) || x.names[key] == "" {
		x.keys++
	}
	x.names.set(key, name)
}

// Keys is the number of keys named or decided.
func (x *luaLimiter) Keys() int { return max(x.keys, len(x.names)) }

// StateBytes is -1: the state is the script's, on the server, not this process's to count.
func (x *luaLimiter) StateBytes() int64 { return -1 }

func (x *luaLimiter) Ahead() int { return x.batch }

func (x *luaLimiter) Allow(key uint32, now, cost int64) algorithms.Decision {
	x.Send(key, now, cost)
	return x.Receive()
}

func (x *luaLimiter) Send(key uint32, now, cost int64) {
	x.sent++
	if int(key) >= len(x.names) || x.names[key] == "" {
		x.SetName(key, x.names.of(key))
	}
	if x.err != nil {
		x.decided.push(algorithms.Decision{})
		return
	}
	name := x.names[key]
	x.calls = append(x.calls, store.UserCall{Key: store.TaggedKey(x.prefix, name), Now: now, Cost: cost})
	x.reqs = append(x.reqs, request{key: name, now: now, cost: cost, index: x.sent})
	if len(x.calls) >= x.batch {
		x.flush()
	}
}

func (x *luaLimiter) Receive() algorithms.Decision {
	if x.decided.len() == 0 {
		x.flush()
	}
	return x.decided.pop()
}

// flush sends the queued calls and queues their decisions; from the first failure on,
// every decision is a refusal.
func (x *luaLimiter) flush() {
	if len(x.calls) == 0 {
		return
	}
	x.results = append(x.results[:0], make([]store.UserResult, len(x.calls))...)
	start := time.Now() // wall time, for the decisions/s line only
	err := x.face.Eval(x.calls, x.results)
	x.l.counted(len(x.calls), time.Since(start))
	if err != nil && x.err == nil {
		x.err = fmt.Errorf("%s: %s: %w", x.l.Describe(), x.reqs[0], err)
	}
	for i, res := range x.results {
		if res.ReadTime {
			x.l.sawTime(x.reqs[i])
		}
		if res.CrossSlot != "" {
			x.l.sawCrossSlot(res.CrossSlot)
		}
		if res.Err != nil && x.err == nil {
			x.err = fmt.Errorf("%s: %s: %w", x.l.Describe(), x.reqs[i], res.Err)
		}
		if x.err != nil {
			x.decided.push(algorithms.Decision{})
			continue
		}
		x.decided.push(algorithms.Decision{Allowed: res.Reply.Allowed, Remaining: res.Reply.Remaining, RetryAfter: res.Reply.RetryAfter})
	}
	x.calls, x.reqs = x.calls[:0], x.reqs[:0]
}

func (x *luaLimiter) Err() error { return x.err }

// Close stops the embedded server, or deletes the keys the limiter wrote on a real one
// and closes the connection. It returns Err, or what went wrong closing.
func (x *luaLimiter) Close() error {
	if x.closed {
		return x.err
	}
	x.closed = true
	if x.owns {
		keys, err := x.r.Keys(x.prefix)
		if err == nil {
			names := make([]string, len(keys))
			for i, k := range keys {
				names[i] = k.Name
			}
			err = x.r.Delete(names...)
		}
		if err != nil && x.err == nil {
			x.err = fmt.Errorf("%s: deleting its keys under %q: %w", x.l.Describe(), x.prefix, err)
		}
	}
	x.r.Close()
	return x.err
}

func virtualTime(ns int64) string { return store.VirtualTime(ns) }
