// Package store is the shared counter store of a fleet of rate-limiting nodes, with two
// faces that decide alike, request for request:
//
//   - the Redis face (NewRedis, NewMiniredis) runs the Lua scripts a user would deploy,
//     embedded from lua/*.lua, through github.com/redis/go-redis/v9 against a real Redis
//     or an embedded github.com/alicebob/miniredis/v2;
//   - the model (NewModel) is an in-process twin of the few Redis semantics those scripts
//     use — string counters, hashes, sorted sets, TTLs on the virtual clock, scripts that
//     run atomically — fast enough for runs of millions of decisions.
//
// Time. Every script takes the virtual time as an argument (ARGV[1], whole microseconds
// since the Unix epoch) and never calls TIME, so a decision depends only on the stored
// state and that argument. TTLs are set with PEXPIRE in milliseconds, relative to the
// server's clock: the model and the miniredis face move that clock with the virtual time
// (SetNow; miniredis through SetTime and FastForward), a real Redis runs it on its wall
// clock. The atomic scripts are written so that a key that has expired and a key that is
// merely stale decide alike (names carry the window index; a bucket expires only once it
// is full again; a GCRA key once its tat has passed), which is why the same decisions come
// out of a real Redis whose clock the simulation cannot move — provided a key does not
// expire on the server's wall clock before it is stale in virtual time, which holds
// whenever the simulation runs faster than real time (the usual case: minutes of traffic
// in seconds) and fails for windows shorter than the wall-clock time a run takes. It also
// needs the times a key sees to be non-decreasing: with skewed node clocks a stale key read
// at an earlier time is not a fresh one, so on a real server (TTLs on its own clock) skewed
// runs can differ from the model, while miniredis, whose TTL clock is the model's, agrees. Only the non-atomic
// INCR-then-EXPIRE variant depends on expiry by design, and it is compared on the model
// and miniredis.
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
	Eval(s *Script, keys []string, args ...int64) ([]int64, error)
	// IncrBy adds n to the string counter at key (0 when missing) and returns the sum,
	// leaving its TTL as it was: the first half of the non-atomic pattern.
	IncrBy(key string, n int64) (int64, error)
	// PExpire gives key a TTL of ms milliseconds: the second half, which a crash skips.
	PExpire(key string, ms int64) error
	// SetNow moves the store's clock to now (nanoseconds since the Unix epoch, virtual,
	// non-decreasing). A real Redis ignores it: its TTLs run on its own clock.
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
	// Value is a string counter's value (0 for other types).
	Value int64
	// Len is the number of fields of a hash or members of a sorted set.
	Len int
}

// NoTTL is the TTL of a key that never expires.
const NoTTL = time.Duration(-1)

// ErrUnavailable wraps every error of a store that could not be reached.
var ErrUnavailable = errors.New("store unavailable")

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
	return nil
}
