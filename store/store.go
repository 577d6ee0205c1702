// Package store is the shared counter store of a fleet of rate-limiting nodes, with two
// faces that decide alike, request for request:
//
//   - the Redis face (NewRedis, NewMiniredis) runs the Lua scripts a user would deploy,
//     embedded from lua/*.lua, against a real Redis or an embedded
//     github.com/alicebob/miniredis/v2, through github.com/redis/go-redis/v9 but for a
//     real server's pipelines, which go on connections that speak RESP2 themselves
//     (wire.go);
//   - the model (NewModel) is an in-process twin of the few Redis semantics those scripts
//     use — string counters, hashes, sorted sets, TTLs on the virtual clock, scripts that
//     run atomically — fast enough for runs of millions of decisions.
//
// Time. The store has its own clock, which in a simulation is the true virtual time and
// never steps back (SetNow); the nodes that call it have theirs, which may be skewed. A
// decision is made on one of the two (Clock): a node's, passed as ARGV[1] in whole
// microseconds since the Unix epoch, or the store's, which a script reads with TIME when
// ARGV[1] is empty — what deployments do to escape skew. The model's twin then reads the
// model's clock, miniredis's TIME returns the virtual clock, and a real server, whose TIME
// is its wall clock, is sent the store's virtual time as ARGV[1] instead.
//
// When a script is called with a time earlier than its key has seen, it never credits the
// same interval twice: no refill, no window reset, no expiry from a backwards step (each
// script states its rule at its top). Nothing that decides depends on a server's wall
// clock: every decision is judged from the times stored with the data (window indexes in
// key names, a bucket's time, a tat, the log's entries, a counter's virtual expiry), so a
// real Redis, whose TTLs run on its wall clock, decides exactly as the model and miniredis,
// whose TTLs run on the virtual clock. TTLs only collect garbage: each key lives until its
// data is stale, plus a margin, keep (ARGV[6], ms), that covers the widest gap between the
// clocks that read it (twice the nodes' skew), plus, on a real server, WallMargin of wall
// time, which no run shorter than that can outlast. The non-atomic INCR-then-EXPIRE
// pattern, whose point is an expiry, keeps that expiry as a virtual timestamp in its
// counter (IncrScript, ExpireScript), so its crash blocks and leaks alike on every face.
//
// Numbers. Scripts compute in integers below 2^53 so that Lua's doubles (in Redis and in
// gopher-lua) are exact; CheckPolicy rejects a policy that would leave that range.
package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Store is one face of the shared store. Each method is one round trip to the store.
// Keys are full names, prefix included; callers build them with a Keyspace.
type Store interface {
	// Eval runs script atomically on keys with integer arguments and returns its reply.
	// A now argument (args[0]) of the store's clock is read on the store (see Clock).
	Eval(s *Script, keys []string, args ...int64) ([]int64, error)
	// SetNow moves the store's clock to now (nanoseconds since the Unix epoch, virtual;
	// an earlier time leaves it). A real Redis keeps its TTLs on its own clock but is sent
	// this time where a script asks for the store's.
	SetNow(now int64) error
	// Keys lists the live keys under prefix in name order, with their TTLs.
	Keys(prefix string) ([]KeyInfo, error)
	// Name says which face this is: "model", "miniredis" or "redis".
	Name() string
	// Close releases connections (and an embedded server).
	Close() error
}

// KeyInfo is one key as Keys lists it.
type KeyInfo struct {
	Name string
	// Type is the Redis type: "string", "hash" or "zset".
	Type string
	// TTL is the time to live, or NoTTL for a key that never expires.
	TTL time.Duration
	// Value is a string counter's value (a GCRA's tat in ns), or a counter hash's count
	// (0 for other types).
	Value int64
	// Counter marks the counter hash of the non-atomic pattern (fields c and e).
	Counter bool
	// Expiry is the virtual expiry (µs since the Unix epoch) a counter hash's second
	// command stored, or 0 when that command never ran (see NonAtomic).
	Expiry int64
	// Len is the number of fields of a hash or members of a sorted set.
	Len int
}

// NoTTL is the TTL of a key that never expires.
const NoTTL = time.Duration(-1)

// WallMargin is the wall time a real server keeps a key past the moment it has gone
// stale in virtual time and keep has passed. A real Redis counts TTLs on its wall clock
// while the run is in virtual time, so a run slower than real time would see keys expire
// before they are stale; with an hour on top, no run shorter than an hour of wall time
// can, whatever its windows. rlsim deletes the keys a run wrote when it ends.
const WallMargin = time.Hour

// Clock is the clock a shared script decides by.
type Clock string

const (
	// NodeClock decides by the calling node's clock, skew included (the default).
	NodeClock Clock = "node"
	// StoreClock decides by the store's clock: the script reads TIME.
	StoreClock Clock = "store"
)

// At is the moment of a decision on the two clocks a shared store sees (ns since the
// Unix epoch).
type At struct {
	// Store is the store's clock: the true virtual time, in the order the store sees
	// requests.
	Store int64
	// Node is the calling node's clock: Store plus the node's skew, or an earlier time
	// when a request reaches the store late.
	Node int64
}

// Now is the moment both clocks read now: one node, no skew.
func Now(now int64) At { return At{Store: now, Node: now} }

// ErrUnavailable wraps every error of a store that could not be reached.
var ErrUnavailable = errors.New("store unavailable")

// ErrTimeout wraps the error of a round trip to a store that sent no reply in time
// (Options.Timeout): a stalled or overloaded server, told apart from one that is down.
var ErrTimeout = errors.New("no reply")

// maxExact is 2^53, the first integer a float64 cannot tell from its neighbour.
const maxExact = 1 << 53

// CheckPolicy reports a policy whose script arithmetic would leave exact integers, or
// whose emission interval would be below one microsecond.
func CheckPolicy(p algorithms.Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	w := p.Window.Microseconds()
	if w < 1 {
		return fmt.Errorf("window %s is below the store's 1µs resolution", p.Window)
	}
	if p.Window%time.Microsecond != 0 {
		return fmt.Errorf("window %s is not a whole number of µs, the unit the store's scripts take a window in", p.Window)
	}
	if w/p.Limit < 1 {
		return fmt.Errorf("limit %d per %s spaces units less than 1µs apart, below the store's resolution", p.Limit, p.Window)
	}
	burst := p.EffectiveBurst()
	big := max(burst, p.Limit)
	// The largest products are counts times the window in µs (the bucket's scaled level,
	// the two-counter comparison), with room for costs of a few times the limit.
	if float64(big)*float64(w)*4 >= maxExact {
		return fmt.Errorf("limit %d, burst %d per %s: the scripts' integers would pass 2^53; use a shorter window or smaller limits", p.Limit, burst, p.Window)
	}
	// The GCRA's times count L-ths of a ns: (burst + 1)·T of them, with T's share below
	// a µs up to 1000·limit.
	if float64(burst+1)*float64(p.Limit)*1000*4 >= maxExact {
		return fmt.Errorf("limit %d, burst %d: the GCRA script's fractions of a ns would pass 2^53; use smaller limits", p.Limit, burst)
	}
	return nil
}
