package store

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Model is the in-process face of the store: a keyspace with the Redis semantics the
// scripts use (string counters, the two-field bucket hash, sorted sets of timestamps,
// TTLs on the virtual clock), where a script runs as one uninterruptible Go call just as
// Redis runs a Lua script. It never fails and never blocks; it is not safe for concurrent
// use (the simulation is single-threaded).
type Model struct {
	ks keyspace
}

var _ Store = (*Model)(nil)

// NewModel returns an empty model whose clock is at 0 until SetNow moves it.
func NewModel() *Model { return &Model{ks: keyspace{keys: map[string]*entry{}}} }

// Name returns "model".
func (m *Model) Name() string { return "model" }

// Eval runs the script's in-process twin atomically.
func (m *Model) Eval(s *Script, keys []string, args ...int64) ([]int64, error) {
	return s.twin(&m.ks, keys, args), nil
}

// IncrBy adds n to the counter at key, keeping its TTL.
func (m *Model) IncrBy(key string, n int64) (int64, error) { return m.ks.incrBy(key, n), nil }

// PExpire gives key a TTL of ms milliseconds; a missing key is left missing.
func (m *Model) PExpire(key string, ms int64) error {
	m.ks.pexpire(key, ms)
	return nil
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
	kindString kind = iota
	kindBucket      // a hash with fields t and s, as token_bucket.lua writes it
	kindZset        // a sorted set of timestamps, as sliding_log.lua writes it
)

// zmember is a sliding-log member "<score>:<seq>".
type zmember struct{ score, seq int64 }

type entry struct {
	kind     kind
	value    int64     // string counter, or the bucket's s
	t        int64     // the bucket's t
	zset     []zmember // the sorted set's members, ascending by score
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

// zTrim drops scores <= cutoff (ZREMRANGEBYSCORE -inf cutoff) and returns ZCARD.
func (ks *keyspace) zTrim(key string, cutoff int64) int64 {
	e := ks.lookup(key)
	if e == nil {
		return 0
	}
	i := 0
	for i < len(e.zset) && e.zset[i].score <= cutoff {
		i++
	}
	e.zset = e.zset[i:]
	if len(e.zset) == 0 {
		delete(ks.keys, key) // Redis deletes an emptied sorted set
		return 0
	}
	return int64(len(e.zset))
}

// zAdd adds the members "<now>:<card+1>" … "<now>:<card+n>" scored now, as
// sliding_log.lua does. Like ZADD, a member already in the set is not added twice — which
// happens when skewed nodes write the same time at the same set size. Members stay sorted
// by score: nodes with skewed clocks can write a time earlier than one already held.
func (ks *keyspace) zAdd(key string, now, n int64) {
	e := ks.lookup(key)
	if e == nil {
		e = &entry{kind: kindZset}
		ks.add(key, e)
	}
	card := int64(len(e.zset))
	for j := int64(1); j <= n; j++ {
		m := zmember{score: now, seq: card + j}
		lo, _ := slices.BinarySearchFunc(e.zset, now, func(z zmember, t int64) int { return cmp.Compare(z.score, t) })
		hi := lo
		for hi < len(e.zset) && e.zset[hi].score == now {
			hi++
		}
		if slices.Contains(e.zset[lo:hi], m) {
			continue
		}
		e.zset = slices.Insert(e.zset, hi, m)
	}
}
