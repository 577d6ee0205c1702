package store

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Model is the in-process face of the store: a keyspace with the Redis semantics the
// scripts use (string counters, the two-field bucket and counter hashes, sorted sets of
// timestamps, TTLs on the store's virtual clock), where a script runs as one
// uninterruptible Go call just as Redis runs a Lua script. It never fails and never
// blocks; it is not safe for concurrent use (the simulation is single-threaded).
type Model struct {
	ks keyspace
}

var _ Store = (*Model)(nil)

// NewModel returns an empty model whose clock is at 0 until SetNow moves it.
func NewModel() *Model { return &Model{ks: keyspace{keys: map[string]*entry{}}} }

// Name returns "model".
func (m *Model) Name() string { return "model" }

// Eval runs the script's in-process twin atomically. A now argument that asks for the
// store's clock reads the model's clock, as the script reads TIME.
func (m *Model) Eval(s *Script, keys []string, args ...int64) ([]int64, error) {
	if len(args) > argNow && args[argNow] == storeTime {
		args = append([]int64(nil), args...)
		args[argNow] = floorDiv(m.ks.now, 1000)
		if len(args) > argSub {
			args[argSub] = m.ks.now - args[argNow]*1000
		}
	}
	return s.twin(&m.ks, keys, args), nil
}

// SetNow moves the clock; keys whose TTL has run out are gone from then on.
func (m *Model) SetNow(now int64) error {
	m.ks.now = max(m.ks.now, now)
	return nil
}

// Keys lists the live keys under prefix, sorted by name.
func (m *Model) Keys(prefix string) ([]KeyInfo, error) {
	var out []KeyInfo
	for name := range m.ks.keys {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		e := m.ks.lookup(name)
		if e == nil {
			continue
		}
		info := KeyInfo{Name: name, TTL: NoTTL}
		if e.expireAt != 0 {
			info.TTL = time.Duration(e.expireAt - m.ks.now)
		}
		switch e.kind {
		case kindString:
			info.Type, info.Value = "string", e.value
		case kindBucket:
			info.Type, info.Len = "hash", 2
		case kindCounter:
			info.Type, info.Len, info.Value, info.Expiry, info.Counter = "hash", 1, e.value, e.t, true
			if e.t != 0 {
				info.Len = 2
			}
		case kindZset:
			info.Type, info.Len = "zset", len(e.zset)
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b KeyInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Len is the number of keys held, expired ones included until a sweep or a read drops them.
func (m *Model) Len() int { return len(m.ks.keys) }

// Close does nothing.
func (m *Model) Close() error { return nil }

type kind uint8

const (
	kindString  kind = iota
	kindBucket       // a hash with fields t and s, as token_bucket.lua writes it
	kindZset         // a sorted set of timestamps, as sliding_log.lua writes it
	kindCounter      // a hash with field c and, once expired by command, e (nonatomic_*.lua)
)

// zmember is a sliding-log member "<ns>:<seq>", its time in ns: Redis scores it by the
// whole µs and orders the members of one score by their ns digits, the same order.
type zmember struct{ ns, seq int64 }

type entry struct {
	kind     kind
	value    int64     // string counter or tat (ns), the bucket's s, or the counter hash's c
	t        int64     // a tat's L-ths of a ns, the bucket's t, or the counter hash's e (0: none)
	zset     []zmember // the sorted set's members, ascending by time
	expireAt int64     // ns on the virtual clock; 0 = no TTL
}

// keyspace is what the twins operate on; each method is the Redis command of its name.
type keyspace struct {
	now  int64 // ns
	keys map[string]*entry
	// sweepAt is the key count at which the next sweep of expired keys runs: like Redis's
	// active expiry it keeps keys nobody reads again (past windows) from piling up, at an
	// amortized constant cost per key created.
	sweepAt int
}

// add stores a new entry at key, sweeping expired keys when the keyspace has doubled.
func (ks *keyspace) add(key string, e *entry) {
	ks.keys[key] = e
	if len(ks.keys) < ks.sweepAt {
		return
	}
	for k, old := range ks.keys {
		if old.expireAt != 0 && old.expireAt <= ks.now {
			delete(ks.keys, k)
		}
	}
	ks.sweepAt = max(2*len(ks.keys), 1024)
}

// lookup returns the live entry at key, deleting it first when its TTL has run out.
func (ks *keyspace) lookup(key string) *entry {
	e := ks.keys[key]
	if e != nil && e.expireAt != 0 && e.expireAt <= ks.now {
		delete(ks.keys, key)
		return nil
	}
	return e
}

func (ks *keyspace) get(key string) int64 {
	if e := ks.lookup(key); e != nil {
		return e.value
	}
	return 0
}

func (ks *keyspace) set(key string, v int64) {
	ks.add(key, &entry{kind: kindString, value: v})
}

// setCell sets the string at key to gcra.lua's tat: ns, and frac L-ths of a ns past them
// (a text "<ns>" or "<ns>:<frac>" on a Redis face).
func (ks *keyspace) setCell(key string, ns, frac int64) {
	ks.add(key, &entry{kind: kindString, value: ns, t: frac})
}

func (ks *keyspace) del(key string) { delete(ks.keys, key) }

func (ks *keyspace) incrBy(key string, n int64) int64 {
	e := ks.lookup(key)
	if e == nil {
		e = &entry{kind: kindString}
		ks.add(key, e)
	}
	e.value += n
	return e.value
}

func (ks *keyspace) pexpire(key string, ms int64) {
	if e := ks.lookup(key); e != nil {
		e.expireAt = ks.now + ms*int64(time.Millisecond)
	}
}

func (ks *keyspace) bucket(key string) (t, s int64, ok bool) {
	if e := ks.lookup(key); e != nil {
		return e.t, e.value, true
	}
	return 0, 0, false
}

func (ks *keyspace) setBucket(key string, t, s int64) {
	e := ks.lookup(key)
	if e == nil {
		e = &entry{kind: kindBucket}
		ks.add(key, e)
	}
	e.t, e.value = t, s
}

// counter returns the counter hash's c and e (HMGET c e).
func (ks *keyspace) counter(key string) (c, e int64, ok bool) {
	if en := ks.lookup(key); en != nil {
		return en.value, en.t, true
	}
	return 0, 0, false
}

// hincrC adds n to the counter hash's c (HINCRBY key c n), creating the hash.
func (ks *keyspace) hincrC(key string, n int64) int64 {
	e := ks.lookup(key)
	if e == nil {
		e = &entry{kind: kindCounter}
		ks.add(key, e)
	}
	e.value += n
	return e.value
}

// setCounterExpiry sets the counter hash's e (HSET key e at) on an existing key.
func (ks *keyspace) setCounterExpiry(key string, at int64) {
	if e := ks.lookup(key); e != nil {
		e.t = at
	}
}

// zNewest is the latest time (ZRANGE key -1 -1 WITHSCORES, and the member's ns).
func (ks *keyspace) zNewest(key string) (int64, bool) {
	e := ks.lookup(key)
	if e == nil || len(e.zset) == 0 {
		return 0, false
	}
	return e.zset[len(e.zset)-1].ns, true
}

// zCountAbove counts the members timed after cutoff (ZCOUNT key (cutoff +inf, and the
// members of cutoff's µs with more ns).
func (ks *keyspace) zCountAbove(key string, cutoff int64) int64 {
	e := ks.lookup(key)
	if e == nil {
		return 0
	}
	i, _ := slices.BinarySearchFunc(e.zset, cutoff+1, func(z zmember, t int64) int { return cmp.Compare(z.ns, t) })
	return int64(len(e.zset) - i)
}

// zScoreAbove is the time of the k-th member (from 1) timed after cutoff, as
// ZRANGEBYSCORE key cutoff +inf WITHSCORES LIMIT reads it past the members of cutoff's µs
// that are not; the caller knows there are k.
func (ks *keyspace) zScoreAbove(key string, cutoff, k int64) int64 {
	e := ks.lookup(key)
	i, _ := slices.BinarySearchFunc(e.zset, cutoff+1, func(z zmember, t int64) int { return cmp.Compare(z.ns, t) })
	return e.zset[i+int(k)-1].ns
}

// zTrim drops the members timed at or before cutoff (ZREMRANGEBYSCORE -inf (cutoff, and
// ZREM of those of cutoff's µs).
func (ks *keyspace) zTrim(key string, cutoff int64) {
	e := ks.lookup(key)
	if e == nil {
		return
	}
	i := 0
	for i < len(e.zset) && e.zset[i].ns <= cutoff {
		i++
	}
	e.zset = e.zset[i:]
	if len(e.zset) == 0 {
		delete(ks.keys, key) // Redis deletes an emptied sorted set
	}
}

// zAdd adds the members "<at>:<base+1>" … "<at>:<base+n>" timed at (ns), as
// sliding_log.lua does. Like ZADD, a member already in the set is not added twice, and members stay
// sorted by time.
func (ks *keyspace) zAdd(key string, at, base, n int64) {
	e := ks.lookup(key)
	if e == nil {
		e = &entry{kind: kindZset}
		ks.add(key, e)
	}
	for j := int64(1); j <= n; j++ {
		m := zmember{ns: at, seq: base + j}
		lo, _ := slices.BinarySearchFunc(e.zset, at, func(z zmember, t int64) int { return cmp.Compare(z.ns, t) })
		hi := lo
		for hi < len(e.zset) && e.zset[hi].ns == at {
			hi++
		}
		if slices.Contains(e.zset[lo:hi], m) {
			continue
		}
		e.zset = slices.Insert(e.zset, hi, m)
	}
}
