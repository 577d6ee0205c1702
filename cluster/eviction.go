package cluster

import (
	"container/heap"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/rlsim/rlsim/store"
)

// EvictionPolicies are the maxmemory policies a store under memory pressure can run.
//
//	allkeys-lru   evict the least recently used key, whatever it holds
//	volatile-ttl  evict the key with a TTL that expires soonest
//	noeviction    evict nothing: a write that needs memory fails (OOM), and the nodes
//	              apply the eviction's outage policy to that request
var EvictionPolicies = []string{"allkeys-lru", "volatile-ttl", "noeviction"}

// Eviction puts the shared store under memory pressure: its keys may take MaxMemory bytes
// (what an empty server already uses aside), beyond which it evicts by Policy — an
// evicted counter restarts from zero, a free pass for its client — or, under noeviction,
// refuses writes and the nodes decide by OutagePolicy.
type Eviction struct {
	MaxMemory int64
	Policy    string
	// OutagePolicy is what a node does with a request whose write the store refused
	// (one of OutagePolicies).
	OutagePolicy string
	// Server leaves the eviction to the store itself — a real Redis configured with the
	// same maxmemory and policy — instead of rlsim's model of it; the fleet then only
	// handles the store's OOM errors. For tests that hold the model to a real server.
	Server bool
}

func (e *Eviction) validate() error {
	switch {
	case e == nil:
		return nil
	case e.MaxMemory <= 0:
		return fieldError("eviction.maxmemory", "must be a positive number of bytes, got %d", e.MaxMemory)
	case !slices.Contains(EvictionPolicies, e.Policy):
		return fieldError("eviction.policy", "unknown policy %q (want one of %s)", e.Policy, strings.Join(EvictionPolicies, ", "))
	case !slices.Contains(OutagePolicies, e.OutagePolicy):
		return fieldError("eviction.outage_policy", "unknown policy %q (want one of %s)", e.OutagePolicy, strings.Join(OutagePolicies, ", "))
	}
	return nil
}

// evictingStore is the shared store with a maxmemory: rlsim's model of Redis 7.0's
// eviction, on any face. Beside the face it keeps a mirror of its keyspace (an in-process
// model that takes every call the face takes), from which it knows each key's type, size
// and TTL, and counts the memory the keys use as a Redis 7.0 server does:
//
//   - per key, its name (an sds: the jemalloc size class of its length plus a header of 1
//     byte below 32 bytes, 3 up to 255, and a NUL), its entry in the main dictionary (24 B,
//     allocated 32), and with a TTL its entry in the expires
//     dictionary (32); a string's object (16 B) unless its value is a shared integer
//     (0 ≤ v < 10000, which Redis does not share under an LRU policy); a hash's object
//     and listpack (7 B + per field its name and its integer's encoding, in size class);
//   - per dictionary, 8 B a bucket, the table a power of two: Redis doubles it when it is
//     full — unless the new table would take the memory over MaxMemory and it is less
//     than 1.618 times full — and shrinks it below a tenth.
//
// Calibrated on redis-server 7.0.15 (Debian 12, jemalloc 5.3.0): the growth of INFO
// used_memory over 1000 to 6000 keys of names 20 to 80 bytes with a TTL — string counters
// 117.8/133.8/149.8/181.8 B per key at names of 20/40/60/80 bytes with shared integers,
// 16 B more without; {t, s} hashes 181.8/197.8/213.8/245.8 — which these rules give within
// 0.2 B. The used memory counted is the keys' alone: a server's own (about 0.9 MB empty)
// is not part of MaxMemory.
//
// Before every command, as Redis does, the store evicts while the keys' memory exceeds
// MaxMemory: under allkeys-lru the key used longest ago (every command that reads or
// writes a key uses it), under volatile-ttl the one with a TTL nearest its end — exactly,
// where Redis samples a few keys at a time (maxmemory-samples 5), so its choice only
// approximates these. Under noeviction, over MaxMemory, a script that would write fails
// without writing (ErrOOM), a read runs.
type evictingStore struct {
	inner  store.Store
	rw     store.ReadWriter
	del    store.Deleter
	mirror *store.Model
	// own says the mirror is the face itself (the model): nothing to copy to it.
	own    bool
	cfg    Eviction
	shared bool // values below 10000 use Redis's shared integers (no LRU policy)
	now    int64

	entries       map[string]*evEntry
	queue         evQueue
	seq           int64
	bytes         int64
	keys, ttlKeys int
	mainT, expT   int // dictionary table sizes (buckets)
	evicted, oom  int64
	keysMax       int
	usedMax       int64
}

type evEntry struct {
	key   string
	bytes int64
	ttl   bool
	prio  int64 // allkeys-lru: last use (ns); volatile-ttl: expiry (ns)
	seq   int64
	index int // in the queue, -1 when not in it
}

var (
	_ store.Store      = (*evictingStore)(nil)
	_ store.ReadWriter = (*evictingStore)(nil)
)

func newEvictingStore(inner store.Store, e Eviction) (*evictingStore, error) {
	del, ok := inner.(store.Deleter)
	if !ok {
		return nil, fmt.Errorf("eviction: the store cannot delete keys")
	}
	s := &evictingStore{inner: inner, del: del, mirror: store.NewModel(), cfg: e,
		shared: e.Policy != "allkeys-lru", entries: map[string]*evEntry{}, mainT: 4, expT: 4}
	s.rw, _ = inner.(store.ReadWriter)
	if m, ok := inner.(*store.Model); ok {
		s.mirror, s.own = m, true
	}
	return s, nil
}

// used is the memory the keys take, tables included.
func (s *evictingStore) used() int64 { return s.bytes + 8*int64(s.mainT+s.expT) }

// sizeClass is the jemalloc size class n bytes are allocated in (small classes: a
// multiple of 16 up to 128, then four classes per doubling).
func sizeClass(n int64) int64 {
	if n <= 8 {
		return 8
	}
	if n <= 128 {
		return (n + 15) &^ 15
	}
	step := int64(1) << (bits.Len64(uint64(n-1)) - 3)
	return (n + step - 1) &^ (step - 1)
}

// intBytes is the bytes a listpack entry of integer v takes, its back-length included.
func intBytes(v int64) int64 {
	switch {
	case v >= 0 && v <= 127:
		return 2
	case v >= -1<<12 && v < 1<<12:
		return 3
	case v >= -1<<15 && v < 1<<15:
		return 4
	case v >= -1<<23 && v < 1<<23:
		return 5
	case v >= -1<<31 && v < 1<<31:
		return 6
	}
	return 10
}

// keyBytes is the memory one key takes (see evictingStore).
func (s *evictingStore) keyBytes(name string, e store.Entry) (int64, error) {
	// The name is an sds: a 1-byte header below 32 bytes, 3 bytes up to 255, and a NUL.
	hdr := int64(3)
	if len(name) < 32 {
		hdr = 1
	}
	b := sizeClass(int64(len(name))+hdr+1) + 32
	if e.ExpireAt != 0 {
		b += 32
	}
	switch e.Type {
	case "string":
		if !s.shared || e.Value < 0 || e.Value >= 10000 {
			b += 16
		}
	case "hash":
		lp := int64(7) + 3 + intBytes(e.Value) // the bucket's s, the counter's c
		if e.Len == 2 {
			lp += 3 + intBytes(e.T)
		}
		b += 16 + sizeClass(lp)
	default:
		return 0, fmt.Errorf("eviction: no memory model of a Redis %s (the sliding log's sorted set)", e.Type)
	}
	return b, nil
}

// maxLoad is the load a Redis 7 dictionary's table may reach before it grows even when
// growing would take it over maxmemory (HASHTABLE_MAX_LOAD_FACTOR).
const maxLoad = 1.618

// table is the size of a dictionary's table holding n keys, from size: it doubles when
// full, unless the new table would take the store's memory over MaxMemory and the load
// is under maxLoad (Redis 7's dictExpandAllowed); below a tenth full it shrinks.
func (s *evictingStore) table(size, n int) int {
	switch {
	case n > size:
		grown := 1 << bits.Len(uint(n-1))
		if float64(n-1)/float64(size) > maxLoad || s.used()+8*int64(grown) <= s.cfg.MaxMemory {
			return grown
		}
	case size > 4 && n*10 < size:
		return max(4, 1<<bits.Len(uint(max(n, 1)-1)))
	}
	return size
}

// account brings the record of keys up to date with the mirror after a call, and marks
// them used now.
func (s *evictingStore) account(keys []string) error {
	for _, k := range keys {
		e, ok := s.mirror.Lookup(k)
		en := s.entries[k]
		if !ok {
			if en != nil {
				s.forget(en)
			}
			continue
		}
		b, err := s.keyBytes(k, e)
		if err != nil {
			return err
		}
		if en == nil {
			en = &evEntry{key: k, index: -1}
			s.entries[k] = en
			s.keys++
		} else {
			s.bytes -= en.bytes
			if en.ttl {
				s.ttlKeys--
			}
		}
		en.bytes, en.ttl = b, e.ExpireAt != 0
		s.bytes += b
		if en.ttl {
			s.ttlKeys++
		}
		s.seq++
		en.seq = s.seq
		switch s.cfg.Policy {
		case "allkeys-lru":
			en.prio = s.now
			s.queue.set(en)
		case "volatile-ttl":
			if en.ttl {
				en.prio = e.ExpireAt
				s.queue.set(en)
			} else {
				s.queue.remove(en)
			}
		}
	}
	s.mainT = s.table(s.mainT, s.keys)
	s.expT = s.table(s.expT, s.ttlKeys)
	s.keysMax = max(s.keysMax, s.keys)
	s.usedMax = max(s.usedMax, s.used())
	return nil
}

func (s *evictingStore) forget(en *evEntry) {
	s.queue.remove(en)
	delete(s.entries, en.key)
	s.bytes -= en.bytes
	s.keys--
	if en.ttl {
		s.ttlKeys--
	}
}

// makeRoom evicts, before a command, while the keys take more than MaxMemory; it reports
// whether the store is still over it (noeviction, or nothing left to evict).
func (s *evictingStore) makeRoom() (over bool, err error) {
	for s.used() > s.cfg.MaxMemory {
		if s.cfg.Policy == "noeviction" || len(s.queue) == 0 {
			return true, nil
		}
		en := heap.Pop(&s.queue).(*evEntry)
		en.index = -1
		if _, live := s.mirror.Lookup(en.key); live {
			if err := s.del.Delete(en.key); err != nil {
				return false, err
			}
			if !s.own {
				s.mirror.Delete(en.key)
			}
			s.evicted++
		}
		s.forget(en)
		s.mainT = s.table(s.mainT, s.keys)
		s.expT = s.table(s.expT, s.ttlKeys)
	}
	return false, nil
}

// SetNow moves the clocks of the face and of the mirror.
func (s *evictingStore) SetNow(now int64) error {
	s.now = max(s.now, now)
	if !s.own {
		s.mirror.SetNow(now)
	}
	return s.inner.SetNow(now)
}

// Eval runs a script as a store under maxmemory would.
func (s *evictingStore) Eval(sc *store.Script, keys []string, args ...int64) ([]int64, error) {
	over, err := s.makeRoom()
	if err != nil {
		return nil, err
	}
	if over {
		// The face is not really out of memory: try the call on the mirror and take it
		// back if it wrote.
		restore := s.mirror.Snapshot(keys...)
		v, _ := s.mirror.Eval(sc, keys, args...)
		restore()
		if wrote(sc, v) {
			s.oom++
			return nil, fmt.Errorf("script %s: %w", sc.Name, store.ErrOOM)
		}
	}
	v, err := s.inner.Eval(sc, keys, args...)
	if err != nil {
		return nil, err
	}
	if !s.own {
		if _, err := s.mirror.Eval(sc, keys, args...); err != nil {
			return nil, err
		}
	}
	return v, s.account(keys)
}

// Keys lists the face's keys.
func (s *evictingStore) Keys(prefix string) ([]store.KeyInfo, error) { return s.inner.Keys(prefix) }

// Name is the face's name.
func (s *evictingStore) Name() string { return s.inner.Name() }

// Close closes the face.
func (s *evictingStore) Close() error { return s.inner.Close() }

func (s *evictingStore) readWriter() (store.ReadWriter, error) {
	if s.rw == nil {
		return nil, fmt.Errorf("the store has no plain read and write commands")
	}
	return s.rw, nil
}

// write runs a plain write command: refused (ErrOOM) over MaxMemory under noeviction.
func (s *evictingStore) write(key string, do func(store.ReadWriter) error) error {
	rw, err := s.readWriter()
	if err != nil {
		return err
	}
	over, err := s.makeRoom()
	if err != nil {
		return err
	}
	if over {
		s.oom++
		return store.ErrOOM
	}
	if err := do(rw); err != nil {
		return err
	}
	if !s.own {
		if err := do(s.mirror); err != nil {
			return err
		}
	}
	return s.account([]string{key})
}

// Get reads counters.
func (s *evictingStore) Get(keys ...string) ([]int64, error) {
	rw, err := s.readWriter()
	if err != nil {
		return nil, err
	}
	if _, err := s.makeRoom(); err != nil {
		return nil, err
	}
	v, err := rw.Get(keys...)
	if err != nil {
		return nil, err
	}
	return v, s.account(keys)
}

// GetBucket reads a bucket.
func (s *evictingStore) GetBucket(key string) (t, v int64, ok bool, err error) {
	rw, err := s.readWriter()
	if err != nil {
		return 0, 0, false, err
	}
	if _, err := s.makeRoom(); err != nil {
		return 0, 0, false, err
	}
	t, v, ok, err = rw.GetBucket(key)
	if err != nil {
		return 0, 0, false, err
	}
	return t, v, ok, s.account([]string{key})
}

// IncrExpire increments a counter.
func (s *evictingStore) IncrExpire(key string, n, ms int64) (int64, error) {
	var v int64
	err := s.write(key, func(rw store.ReadWriter) error {
		var err error
		if rw == s.rw {
			v, err = rw.IncrExpire(key, n, ms)
		} else {
			_, err = rw.IncrExpire(key, n, ms)
		}
		return err
	})
	return v, err
}

// SetExpire sets a counter.
func (s *evictingStore) SetExpire(key string, v, ms int64) error {
	return s.write(key, func(rw store.ReadWriter) error { return rw.SetExpire(key, v, ms) })
}

// SetBucket writes a bucket.
func (s *evictingStore) SetBucket(key string, t, v, ms int64) error {
	return s.write(key, func(rw store.ReadWriter) error { return rw.SetBucket(key, t, v, ms) })
}

// evQueue orders keys for eviction: lowest priority first, then oldest record.
type evQueue []*evEntry

func (q evQueue) Len() int { return len(q) }
func (q evQueue) Less(i, j int) bool {
	return q[i].prio < q[j].prio || q[i].prio == q[j].prio && q[i].seq < q[j].seq
}
func (q evQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *evQueue) Push(x any) {
	en := x.(*evEntry)
	en.index = len(*q)
	*q = append(*q, en)
}
func (q *evQueue) Pop() any {
	old := *q
	en := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	en.index = -1
	return en
}

// set puts en in the queue, or moves it to its new place.
func (q *evQueue) set(en *evEntry) {
	if en.index < 0 {
		heap.Push(q, en)
		return
	}
	heap.Fix(q, en.index)
}

// remove takes en out of the queue if it is in it.
func (q *evQueue) remove(en *evEntry) {
	if en.index >= 0 {
		heap.Remove(q, en.index)
		en.index = -1
	}
}
