package cluster

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The shared-racy placement: the node reads the counter, decides, and writes back one
// round trip later, so nodes interleave (racy, below).
func init() {
	registerPlacement(PlacementKind{
		Name: "shared-racy",
		Doc:  "the node reads the counter, decides, and writes back one round trip later: nodes interleave",
		Rank: 60,
		Runs: func(_ *Config, algs []string) []string { return keep(algs, RacyAlgorithms()) },
		New: func(f *Fleet, st store.Store) (placement, error) {
			c := f.cfg
			return newRacy(st, f.algorithm, f.policy, c, func(at int64) bool {
				_, o := f.outageAt(time.Duration(at - c.Epoch))
				return o != nil
			})
		},
	})
}

var (
	_ placement = (*racy)(nil)
	_ finisher  = (*racy)(nil)
)

func (r *racy) decide(f *Fleet, t *ticket, outage *Outage) {
	if o := f.reach(t, outage); o != nil {
		t.d = f.failover(o, t.nd, t.key, t.nodeNow, t.cost, false)
		return
	}
	reply, trips, err := r.decideRead(t.node, f.names[t.key], t.now, t.nodeNow, t.cost)
	t.trips = trips
	t.d = f.storeReply(t, reply, err)
}

// finish lands the writes still in flight, as they would, and counts what raced.
func (r *racy) finish(f *Fleet, s *Stats) {
	if f.err == nil {
		f.fail(r.drain())
	}
	s.StaleReads, s.LostWrites = r.staleReads, r.lostWrites
}

// RacyAlgorithms lists the algorithms the shared-racy placement runs: those with a store
// script whose whole state a node can read with one command and write back with
// another, by the form of that state (algorithms.StateForm):
//
//	one window count     GET the window's counter → compare → INCRBY (the notes' example)
//	two window counts    MGET the previous and current counters → estimate → INCRBY the current
//	a bucket             HMGET t s → refill and take → HSET t s (read-modify-write)
//	a TAT                GET tat → compare → SET tat
//
// A set of timestamps (the sliding log) is left out: no node reads it whole before every
// decision.
func RacyAlgorithms() []string {
	return algorithms.Select(func(k *algorithms.Kind) bool { return k.Script != "" && racyForms[k.Form] })
}

var racyForms = map[algorithms.StateForm]bool{
	algorithms.FormWindowCount: true, algorithms.FormTwoWindowCounts: true, algorithms.FormBucket: true, algorithms.FormTAT: true,
}

// racy decides as nodes do when they keep the limit logic to themselves and the store as
// plain data: a node reads the key's state, decides, and, when it admits, writes the new
// state back — two commands with a store round trip between them, so nodes interleave.
// The arithmetic is the atomic scripts' (store/lua), done in the node; the keys are the
// scripts' keys.
//
// Time. A read runs at the store at its request's arrival time, and the write it leads
// to lands one round trip later (the reply travels back, the node decides in no time,
// the write travels out). Requests come in time order, so writes land in the order they
// were sent; before each read, every write that has landed by then (at or before the
// read) is applied. A read therefore misses the writes sent in the round trip before it.
//
// A node never races with itself: it applies its own writes still in flight to what it
// reads, as the store will (an increment adds, a SET replaces), as a node that handles
// one decision per key at a time would see it. One node therefore decides as the atomic
// script does, and each of N nodes misses what the other N−1 have in flight:
// over-admission grows with the node count and with the round trip. An increment loses
// nothing — every admission counts once it lands, so a window over-admits by what was in
// flight when it filled — while a SET loses updates: the last writer wins, and a bucket
// or tat written from a stale read erases what every write landed since that read took.
//
// A write whose landing falls in a store outage is lost. Every write gives its key a TTL
// for garbage collection only: the key outlives the last read that can name it (its
// window or refill time, plus twice the skew and a round trip), so expiry never decides.
type racy struct {
	rw      store.ReadWriter
	names   *store.Limiter // names the keys as the algorithm's script does
	form    algorithms.StateForm
	limit   int64
	window  int64 // µs
	burst   int64
	latency int64 // ns
	margin  int64 // µs of TTL beyond the last time a key can be read
	down    func(at int64) bool

	inFlight []write // sent, not landed, in landing order from head on
	head     int
	mine     map[mineKey]*overlay // each node's own writes in flight, per store key
	total    map[string]int       // every node's writes in flight, per store key

	staleReads int64 // reads that missed another node's write in flight
	lostWrites int64 // writes that landed in an outage
}

type writeKind uint8

const (
	incrWrite   writeKind = iota // INCRBY v, PEXPIRE
	setWrite                     // SET v PX
	bucketWrite                  // HSET t s, PEXPIRE
)

// write is one write in flight.
type write struct {
	at   int64 // ns, when it lands
	node int
	key  string
	kind writeKind
	v, t int64 // the increment or value (the bucket's s); the bucket's t
	ms   int64 // its TTL
}

type mineKey struct {
	node int
	key  string
}

// overlay is one node's writes in flight to one key.
type overlay struct {
	n    int   // how many
	incr int64 // the sum of their increments
	v, t int64 // the last SET's value (and bucket time)
}

func newRacy(st store.Store, algorithm string, p algorithms.Policy, c Config, down func(int64) bool) (*racy, error) {
	if !slices.Contains(RacyAlgorithms(), algorithm) {
		return nil, fmt.Errorf("placement shared-racy: no read-decide-write form of %q (want one of %s)", algorithm, strings.Join(RacyAlgorithms(), ", "))
	}
	rw, ok := st.(store.ReadWriter)
	if !ok {
		return nil, fmt.Errorf("placement shared-racy: the store has no plain read and write commands")
	}
	names, err := store.NewLimiter(st, algorithm, p, c.Prefix)
	if err != nil {
		return nil, err
	}
	margin := 2*c.Skew + c.Latency
	return &racy{
		rw: rw, names: names, form: algorithms.FormOf(algorithm),
		limit: p.Limit, window: p.Window.Microseconds(), burst: p.EffectiveBurst(),
		latency: int64(c.Latency), margin: ceilDiv(int64(margin), int64(time.Microsecond)),
		down: down, mine: map[mineKey]*overlay{}, total: map[string]int{},
	}, nil
}

// decideRead takes node's decision for the client name at now (ns, true time; nodeNow is the
// node's clock): the read, the decision, and the write it sends. trips is 1 for a refusal
// (the read), 2 for an admission (the read and the write).
func (r *racy) decideRead(node int, name string, now, nodeNow, cost int64) (reply store.Reply, trips int, err error) {
	if err := r.land(now); err != nil {
		return reply, 0, err
	}
	if err := r.rw.SetNow(now); err != nil {
		return reply, 0, err
	}
	keys := r.names.Keys(name, nodeNow)
	us := floorDiv(nodeNow, 1000)
	for _, k := range keys {
		if ov := r.mine[mineKey{node, k}]; r.total[k] > ov.count() {
			r.staleReads++
			break
		}
	}
	switch r.form {
	case algorithms.FormWindowCount, algorithms.FormTwoWindowCounts:
		counts, err := r.rw.Get(keys...)
		if err != nil {
			return reply, 1, err
		}
		for i, k := range keys {
			counts[i] += r.mine[mineKey{node, k}].pendingIncr()
		}
		if r.form == algorithms.FormWindowCount {
			reply = r.fixedWindow(node, keys[0], now, us, counts[0], cost)
		} else {
			reply = r.slidingWindow(node, keys[1], now, us, counts[0], counts[1], cost)
		}
	case algorithms.FormBucket:
		t, s, ok, err := r.rw.GetBucket(keys[0])
		if err != nil {
			return reply, 1, err
		}
		if ov := r.mine[mineKey{node, keys[0]}]; ov != nil {
			t, s, ok = ov.t, ov.v, true
		}
		reply = r.tokenBucket(node, keys[0], now, us, t, s, ok, cost)
	case algorithms.FormTAT:
		tat, err := r.rw.Get(keys[0])
		if err != nil {
			return reply, 1, err
		}
		if ov := r.mine[mineKey{node, keys[0]}]; ov != nil {
			tat[0] = ov.v
		}
		reply = r.gcra(node, keys[0], now, us, tat[0], cost)
	}
	if reply.Allowed {
		return reply, 2, nil
	}
	return reply, 1, nil
}

// reply is the decision of the script whose arithmetic the node does: allowed, remaining,
// retry_after and reset in µs, as the script returns them.
func (r *racy) reply(v ...int64) store.Reply {
	rep, _ := store.ReplyOf(r.names.Script(), v) // four integers, as the script's
	return rep
}

func (r *racy) fixedWindow(node int, key string, now, us, count, cost int64) store.Reply {
	toEnd := (floorDiv(us, r.window)+1)*r.window - us
	if count+cost > r.limit {
		retry, reset := toEnd, int64(0)
		if cost > r.limit {
			retry = store.Never
		}
		if count > 0 {
			reset = toEnd
		}
		return r.reply(0, max(r.limit-count, 0), retry, reset)
	}
	r.send(write{at: now + r.latency, node: node, key: key, kind: incrWrite, v: cost, ms: ceilDiv(r.window+r.margin, 1000)})
	return r.reply(1, max(r.limit-count-cost, 0), 0, toEnd)
}

func (r *racy) slidingWindow(node int, key string, now, us, prev, curr, cost int64) store.Reply {
	limit, window := r.limit, r.window
	elapsed := us - floorDiv(us, window)*window
	carried := prev * (window - elapsed)
	if carried+(curr+cost)*window > limit*window {
		return r.reply(0, store.SlidingWindowRemaining(limit, window, prev, curr, elapsed), store.SlidingWindowRetry(limit, window, prev, curr, elapsed, cost), store.SlidingWindowReset(window, prev, curr, elapsed))
	}
	r.send(write{at: now + r.latency, node: node, key: key, kind: incrWrite, v: cost, ms: ceilDiv(2*window+r.margin, 1000)})
	return r.reply(1, store.SlidingWindowRemaining(limit, window, prev, curr+cost, elapsed), 0, store.SlidingWindowReset(window, prev, curr+cost, elapsed))
}

// tokenBucket is token_bucket.lua's arithmetic (tokens scaled by the window), with the
// limiter contract for time that goes backwards: a read earlier than the stored time
// refills nothing and the write keeps the later time.
func (r *racy) tokenBucket(node int, key string, now, us, t, s int64, found bool, cost int64) store.Reply {
	limit, window := r.limit, r.window
	capacity := r.burst * window
	level, at := capacity, us
	if found {
		level = s
		elapsed := us - t
		if elapsed >= ceilDiv(capacity-level, limit) {
			level = capacity
		} else if elapsed > 0 {
			level += elapsed * limit
		}
		at = max(t, us)
	}
	if cost*window > level {
		return r.reply(0, floorDiv(level, window), store.BucketRetry(limit, window, r.burst, level, at, us, cost), store.BucketFull(limit, capacity, level, at)-us)
	}
	level -= cost * window
	ttl := at - us + ceilDiv(capacity-level, limit) + r.margin
	r.send(write{at: now + r.latency, node: node, key: key, kind: bucketWrite, v: level, t: at, ms: ceilDiv(ttl, 1000)})
	return r.reply(1, floorDiv(level, window), 0, store.BucketFull(limit, capacity, level, at)-us)
}

// gcra is gcra.lua's arithmetic.
func (r *racy) gcra(node int, key string, now, us, tat, cost int64) store.Reply {
	interval := floorDiv(r.window, r.limit)
	tolerance := r.burst * interval
	tat = max(tat, us)
	newTat := tat + cost*interval
	allowAt := newTat - tolerance
	if us < allowAt {
		retry := allowAt - us
		if cost > r.burst {
			retry = store.Never
		}
		return r.reply(0, max(floorDiv(us-(tat-tolerance), interval), 0), retry, tat-us)
	}
	r.send(write{at: now + r.latency, node: node, key: key, kind: setWrite, v: newTat, ms: ceilDiv(newTat-us+r.margin, 1000)})
	return r.reply(1, floorDiv(us-allowAt, interval), 0, newTat-us)
}

// send puts a write in flight.
func (r *racy) send(w write) {
	r.inFlight = append(r.inFlight, w)
	mk := mineKey{w.node, w.key}
	ov := r.mine[mk]
	if ov == nil {
		ov = &overlay{}
		r.mine[mk] = ov
	}
	ov.n++
	if w.kind == incrWrite {
		ov.incr += w.v
	} else {
		ov.v, ov.t = w.v, w.t
	}
	r.total[w.key]++
}

// land applies, in order, the writes in flight that land at or before now.
func (r *racy) land(now int64) error {
	for r.head < len(r.inFlight) && r.inFlight[r.head].at <= now {
		w := r.inFlight[r.head]
		r.inFlight[r.head] = write{}
		r.head++
		mk := mineKey{w.node, w.key}
		ov := r.mine[mk]
		if ov.n--; ov.n == 0 {
			delete(r.mine, mk)
		} else if w.kind == incrWrite {
			ov.incr -= w.v
		}
		if r.total[w.key]--; r.total[w.key] == 0 {
			delete(r.total, w.key)
		}
		if err := r.apply(w); err != nil {
			return err
		}
	}
	if r.head == len(r.inFlight) {
		r.inFlight, r.head = r.inFlight[:0], 0
	} else if r.head > 1024 && r.head > len(r.inFlight)/2 {
		n := copy(r.inFlight, r.inFlight[r.head:])
		r.inFlight, r.head = r.inFlight[:n], 0
	}
	return nil
}

func (r *racy) apply(w write) error {
	if r.down(w.at) {
		r.lostWrites++
		return nil
	}
	if err := r.rw.SetNow(w.at); err != nil {
		return err
	}
	switch w.kind {
	case incrWrite:
		_, err := r.rw.IncrExpire(w.key, w.v, w.ms)
		return err
	case setWrite:
		return r.rw.SetExpire(w.key, w.v, w.ms)
	}
	return r.rw.SetBucket(w.key, w.t, w.v, w.ms)
}

// drain lands every write still in flight, as the store would once the run is over.
func (r *racy) drain() error { return r.land(math.MaxInt64) }

func (ov *overlay) count() int {
	if ov == nil {
		return 0
	}
	return ov.n
}

func (ov *overlay) pendingIncr() int64 {
	if ov == nil {
		return 0
	}
	return ov.incr
}

// floorDiv is ⌊a/b⌋ for b > 0, as the scripts' math.floor(a / b).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// ceilDiv is ⌈a/b⌉ for b > 0.
func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
