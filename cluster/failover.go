package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/store"
)

// Failover is a store failover: at At the primary fails and a replica takes over. The
// replica receives the primary's writes asynchronously, Lag behind (Redis replication is
// asynchronous: a write is acknowledged before any replica has it), so the writes of the
// last Lag before the failure are lost — the keys they counted are under-counted from
// then on, and the clients behind them pass again what they had already spent.
type Failover struct {
	At, Lag time.Duration
}

// Reshard moves a share of a Redis Cluster's hash slots to another node over [At, At+For):
// the keys of the moving slots (Fraction of the 16384 slots, by store.Slot: CRC16 of the
// key's hash tag, the client key, so the keys of one call move together) are read empty
// on the new node until the move completes, then the migrated keys replace what was
// written there meanwhile (MIGRATE … REPLACE).
type Reshard struct {
	At, For  time.Duration
	Fraction float64
}

// replicatedStore is the shared store with failovers and slot moves. Each failover i has a
// keyspace of its own on the same store, the replica that takes over at it (the keys
// carry "#f<i>"); every write the primary takes is also made at once on the replicas of
// every later failover, unless the next failover falls within Lag of it: that write is
// lost to them (lostWrites). A replica made after a failover starts as a full copy of the
// new primary (as Redis's full resynchronisation does), so only the writes of the lag
// before each failover are lost. Keys of a slot on the move carry "#m<i>" while it moves.
//
// The replicas live on the same store as the primary, so the figures are those of the
// scenario's store face — model, miniredis or a real server — alike.
type replicatedStore struct {
	inner      store.Store
	rw         store.ReadWriter
	epoch, now int64
	failovers  []Failover
	reshards   []Reshard
	gen        int // failovers passed: the keyspace in service
	lostWrites int64
}

var (
	_ store.Store      = (*replicatedStore)(nil)
	_ store.ReadWriter = (*replicatedStore)(nil)
)

func newReplicatedStore(inner store.Store, c Config) *replicatedStore {
	s := &replicatedStore{inner: inner, epoch: c.Epoch, failovers: c.Failovers, reshards: c.Reshards}
	s.rw, _ = inner.(store.ReadWriter)
	return s
}

// keyName is key's name in keyspace gen at the store's time.
func (s *replicatedStore) keyName(key string, gen int) string {
	name := key
	if gen > 0 {
		name += "#f" + strconv.Itoa(gen)
	}
	elapsed := time.Duration(s.now - s.epoch)
	for i, r := range s.reshards {
		if elapsed >= r.At && elapsed < r.At+r.For && float64(store.Slot(key)) < r.Fraction*store.Slots {
			name += "#m" + strconv.Itoa(i)
		}
	}
	return name
}

func (s *replicatedStore) names(keys []string, gen int) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = s.keyName(k, gen)
	}
	return out
}

// SetNow moves the store's clock and fails over at every failover it passes.
func (s *replicatedStore) SetNow(now int64) error {
	s.now = max(s.now, now)
	for s.gen < len(s.failovers) && s.now-s.epoch >= int64(s.failovers[s.gen].At) {
		s.gen++
	}
	return s.inner.SetNow(now)
}

// survives reports whether a write the primary takes now reaches the replica that takes
// over next (or there is none).
func (s *replicatedStore) survives() bool {
	if s.gen == len(s.failovers) {
		return true
	}
	f := s.failovers[s.gen]
	return s.now-s.epoch <= int64(f.At-f.Lag)
}

// replicate makes a write the primary has taken on the replicas, or counts it lost.
func (s *replicatedStore) replicate(write func(gen int) error) error {
	if !s.survives() {
		s.lostWrites++
		return nil
	}
	for g := s.gen + 1; g <= len(s.failovers); g++ {
		if err := write(g); err != nil {
			return err
		}
	}
	return nil
}

// Eval runs the script on the primary and, when it wrote, on the replicas.
func (s *replicatedStore) Eval(sc *store.Script, keys []string, args ...int64) ([]int64, error) {
	v, err := s.inner.Eval(sc, s.names(keys, s.gen), args...)
	if err != nil || !wrote(sc, v) {
		return v, err
	}
	return v, s.replicate(func(g int) error {
		_, err := s.inner.Eval(sc, s.names(keys, g), args...)
		return err
	})
}

// wrote reports whether a script call that answered v wrote: every decision script writes
// exactly when it admits (or grants), INCR and Kong's counter (which counts every
// request) always, the expiry when its key exists.
func wrote(sc *store.Script, v []int64) bool {
	switch {
	case sc == store.IncrScript, sc == store.CounterScript:
		return true
	case len(v) == 0:
		return false
	}
	return v[0] > 0
}

// Keys lists the keys of the keyspace in service under prefix, by their plain names.
func (s *replicatedStore) Keys(prefix string) ([]store.KeyInfo, error) {
	all, err := s.inner.Keys(prefix)
	if err != nil {
		return nil, err
	}
	suffix := ""
	if s.gen > 0 {
		suffix = "#f" + strconv.Itoa(s.gen)
	}
	var out []store.KeyInfo
	for _, k := range all {
		plain, ok := strings.CutSuffix(k.Name, suffix)
		if !ok || strings.Contains(plain, "#") {
			continue
		}
		k.Name = plain
		out = append(out, k)
	}
	return out, nil
}

// Name is the inner face's name.
func (s *replicatedStore) Name() string { return s.inner.Name() }

// Close closes the inner face.
func (s *replicatedStore) Close() error { return s.inner.Close() }

func (s *replicatedStore) readWriter() (store.ReadWriter, error) {
	if s.rw == nil {
		return nil, fmt.Errorf("the store has no plain read and write commands")
	}
	return s.rw, nil
}

// Get reads counters from the primary.
func (s *replicatedStore) Get(keys ...string) ([]int64, error) {
	rw, err := s.readWriter()
	if err != nil {
		return nil, err
	}
	return rw.Get(s.names(keys, s.gen)...)
}

// GetBucket reads a bucket from the primary.
func (s *replicatedStore) GetBucket(key string) (t, v int64, ok bool, err error) {
	rw, err := s.readWriter()
	if err != nil {
		return 0, 0, false, err
	}
	return rw.GetBucket(s.keyName(key, s.gen))
}

// IncrExpire increments on the primary and the replicas.
func (s *replicatedStore) IncrExpire(key string, n, ms int64) (int64, error) {
	rw, err := s.readWriter()
	if err != nil {
		return 0, err
	}
	v, err := rw.IncrExpire(s.keyName(key, s.gen), n, ms)
	if err != nil {
		return v, err
	}
	return v, s.replicate(func(g int) error {
		_, err := rw.IncrExpire(s.keyName(key, g), n, ms)
		return err
	})
}

// SetExpire sets a counter on the primary and the replicas.
func (s *replicatedStore) SetExpire(key string, v, ms int64) error {
	rw, err := s.readWriter()
	if err != nil {
		return err
	}
	if err := rw.SetExpire(s.keyName(key, s.gen), v, ms); err != nil {
		return err
	}
	return s.replicate(func(g int) error { return rw.SetExpire(s.keyName(key, g), v, ms) })
}

// SetBucket writes a bucket on the primary and the replicas.
func (s *replicatedStore) SetBucket(key string, t, v, ms int64) error {
	rw, err := s.readWriter()
	if err != nil {
		return err
	}
	if err := rw.SetBucket(s.keyName(key, s.gen), t, v, ms); err != nil {
		return err
	}
	return s.replicate(func(g int) error { return rw.SetBucket(s.keyName(key, g), t, v, ms) })
}

// validateFailovers checks failovers and reshards, naming the field.
func validateFailovers(fs []Failover, rs []Reshard) error {
	for i, f := range fs {
		switch {
		case f.Lag < 0:
			return fieldError(fmt.Sprintf("failovers[%d].lag", i), "must not be negative")
		case i > 0 && f.At <= fs[i-1].At:
			return fieldError(fmt.Sprintf("failovers[%d].at", i), "failovers must be in time order")
		}
	}
	for i, r := range rs {
		switch {
		case r.For <= 0:
			return fieldError(fmt.Sprintf("reshards[%d].for", i), "must be a positive duration")
		case r.Fraction <= 0 || r.Fraction > 1:
			return fieldError(fmt.Sprintf("reshards[%d].fraction", i), "must be in (0, 1], got %g", r.Fraction)
		case i > 0 && r.At < rs[i-1].At+rs[i-1].For:
			return fieldError(fmt.Sprintf("reshards[%d].at", i), "moves must be in time order and not overlap")
		}
	}
	return nil
}
