package store

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/rlsim/rlsim/sim"
)

// ttlClock counts the TTLs of an embedded miniredis in virtual time without
// Miniredis.FastForward, which walks (and sorts) every key of the server on each call:
// with 100k keys that is milliseconds a call, the whole cost of a run. It keeps each
// key's deadline (virtual ns) itself, deletes a key when the clock reaches its deadline
// (as FastForward does: a TTL run down to 0 is gone), and before a call sets the TTL
// miniredis holds to the exact time left for the keys the call can see: those in
// KEYS[1]'s hash tag, and those a call of another tag has touched ("foreign"), so that
// TTL, PTTL, EXPIRETIME and EXPIRE … GT/LT read what a server counting virtual time
// would hold. After the call it reads back the TTLs of every name the call's commands
// carried: one that differs from what it left was set by the call, and its deadline is
// the call's time plus it; 0 is a key without a TTL (or gone).
//
// Commands whose keys or TTLs it cannot follow this way (hash-field TTLs, another
// database, a flush) switch it off for the rest of the run: every TTL is set exact once,
// and the face goes back to FastForward. It is not safe for concurrent use beyond its hook.
type ttlClock struct {
	m *miniredis.Miniredis

	keys   map[string]*ttlEntry
	groups map[string]map[string]bool // hash tag (or foreign) → keys with a deadline
	due    sim.Queue[string]

	mu      sync.Mutex // guards what the server's hook writes: touched, off
	touched []string
	off     bool
	// tag is the hash tag of the call under way.
	tag string
}

// foreign is the group of keys that a call of another hash tag has touched: they are
// set exact before every call.
const foreign = "\x00foreign"

type ttlEntry struct {
	deadline int64         // virtual ns
	stored   time.Duration // the TTL miniredis holds for the key, as last set or read
	group    string
}

func newTTLClock(m *miniredis.Miniredis) *ttlClock {
	return &ttlClock{m: m, keys: map[string]*ttlEntry{}, groups: map[string]map[string]bool{}}
}

// ttlBlind are the commands that make a ttlClock give way to FastForward: TTLs it does
// not see (hash fields) or keys outside the database it reads.
var ttlBlind = map[string]bool{
	"HEXPIRE": true, "HPEXPIRE": true, "HEXPIREAT": true, "HPEXPIREAT": true, "HPERSIST": true,
	"HSETEX": true, "HGETEX": true, "SELECT": true, "MOVE": true, "SWAPDB": true, "COPY": true,
	"FLUSHDB": true, "FLUSHALL": true, "RESTORE": true, "MIGRATE": true,
}

// saw is the server's hook: it notes the names a command carries (any argument may be a
// key), or that the clock must give way.
func (t *ttlClock) saw(cmd string, args []string) {
	if cmd == "EVALSHA" || cmd == "EVAL" || cmd == clockCommand {
		return
	}
	t.mu.Lock()
	if ttlBlind[cmd] {
		t.off = true
	}
	t.touched = append(t.touched, args...)
	t.mu.Unlock()
}

// Off reports whether the clock has given way to FastForward.
func (t *ttlClock) Off() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.off
}

// expire deletes the keys whose deadline is at or before now.
func (t *ttlClock) expire(now int64) {
	for t.due.Len() > 0 && int64(t.due.Min().At) <= now {
		d := t.due.Pop()
		if e := t.keys[d.Value]; e != nil && e.deadline == int64(d.At) {
			t.m.Del(d.Value)
			t.drop(d.Value, e)
		}
	}
}

func (t *ttlClock) drop(key string, e *ttlEntry) {
	delete(t.keys, key)
	if g := t.groups[e.group]; g != nil {
		delete(g, key)
		if len(g) == 0 {
			delete(t.groups, e.group)
		}
	}
}

// before readies the server for a call on key at now: expires what is due and sets the
// TTLs the call can see to the time they have left.
func (t *ttlClock) before(now int64, key string) {
	t.expire(now)
	t.tag = HashTag(key)
	t.exact(now, t.groups[t.tag])
	t.exact(now, t.groups[foreign])
	t.mu.Lock()
	t.touched = t.touched[:0]
	t.mu.Unlock()
}

// exact sets the TTL miniredis holds for each of keys to its deadline less now.
func (t *ttlClock) exact(now int64, keys map[string]bool) {
	for k := range keys {
		e := t.keys[k]
		if left := time.Duration(e.deadline - now); e.stored != left {
			t.m.SetTTL(k, left)
			e.stored = left
		}
	}
}

// after reads back the TTLs of the names the call at now carried.
func (t *ttlClock) after(now int64) {
	t.mu.Lock()
	touched := t.touched
	t.touched = nil
	t.mu.Unlock()
	for _, k := range touched {
		e := t.keys[k]
		ttl := t.m.TTL(k)
		switch {
		case e != nil && ttl == e.stored:
			if e.group != foreign && e.group != t.tag {
				t.regroup(k, e, foreign)
			}
			continue
		case ttl <= 0:
			if e != nil {
				t.drop(k, e)
			}
			continue
		}
		group := HashTag(k)
		if group != t.tag {
			group = foreign
		}
		if e == nil {
			e = &ttlEntry{group: group}
			t.keys[k] = e
			t.join(k, group)
		} else if e.group != group && e.group != foreign {
			t.regroup(k, e, group)
		}
		e.deadline, e.stored = now+int64(ttl), ttl
		t.due.Push(sim.Item[string]{At: time.Duration(e.deadline), Value: k})
	}
	t.mu.Lock()
	t.touched = touched[:0]
	t.mu.Unlock()
}

func (t *ttlClock) join(k, group string) {
	g := t.groups[group]
	if g == nil {
		g = map[string]bool{}
		t.groups[group] = g
	}
	g[k] = true
}

func (t *ttlClock) regroup(k string, e *ttlEntry, group string) {
	if g := t.groups[e.group]; g != nil {
		delete(g, k)
		if len(g) == 0 {
			delete(t.groups, e.group)
		}
	}
	e.group = group
	t.join(k, group)
}

// sync sets every TTL it follows exact at now, for whoever reads them next (a listing of
// the keys, or FastForward once the clock has given way).
func (t *ttlClock) sync(now int64) {
	t.expire(now)
	for _, g := range t.groups {
		t.exact(now, g)
	}
}
