package run

import (
	"fmt"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// runPasses decides the scenario's traffic with every limiter, each measured by its
// collector (lims[i] by cols[i]). Open-loop traffic does not depend on any decision, so
// the limiters are split into contiguous groups and each group makes one pass over its
// own copy of the traffic (same seed, same requests), the groups in parallel. Every
// limiter and collector sees exactly the requests it would see alone, in the same order,
// so the results are the same for any number of workers. With a decisions file each
// limiter gets its own pass, one after the other, so the rows stay grouped by algorithm.
// It returns the bytes of one pass's interned key names.
func runPasses(sc *scenario.Scenario, lims []algorithms.Limiter, cols []*report.Collector, seed uint64, o Options) (int64, error) {
	groups := passGroups(len(lims), o.Workers, o.Decisions != nil)
	errs := make([]error, len(groups))
	interned := make([]int64, len(groups))
	progress := make([]*progressCounter, len(lims))
	for i, lim := range lims {
		progress[i] = o.watch(sc, lim.Name(), i, len(lims))
	}
	if len(groups) == 1 || o.Decisions != nil || o.Progress != nil {
		for g, span := range groups {
			interned[g], errs[g] = runPass(sc, lims[span[0]:span[1]], cols[span[0]:span[1]], seed, o.Decisions, progress[span[0]:span[1]])
			if errs[g] != nil {
				return 0, errs[g]
			}
		}
		return interned[0], nil
	}
	// Each group keeps its own error, so the one reported is the first group's whatever
	// the timing.
	var eg errgroup.Group
	for g, span := range groups {
		eg.Go(func() error {
			interned[g], errs[g] = runPass(sc, lims[span[0]:span[1]], cols[span[0]:span[1]], seed, nil, progress[span[0]:span[1]])
			return nil
		})
	}
	eg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return interned[0], nil
}

// passGroups splits n limiters into at most workers contiguous [from, to) spans of
// near-equal size; one span per limiter when each needs its own pass.
func passGroups(n, workers int, onePerLimiter bool) [][2]int {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if onePerLimiter {
		workers = n
	}
	workers = max(min(workers, n), 1)
	groups := make([][2]int, 0, workers)
	from := 0
	for g := range workers {
		to := from + n/workers
		if g < n%workers {
			to++
		}
		groups = append(groups, [2]int{from, to})
		from = to
	}
	return groups
}

// maxReservedKeys bounds the per-key windows reserved before a run: 2^20 keys (48 MiB per
// collector).
const maxReservedKeys = 1 << 20

// pass is one walk over the traffic with a group of limiters.
type pass struct {
	name     string
	lims     []algorithms.Limiter
	cols     []*report.Collector
	epoch    int64 // t=0 in Unix nanoseconds, for the limiters' aligned windows
	keys     *keySpace
	dec      *DecisionWriter
	writeErr error
	progress []*progressCounter // per limiter; nil entries count nothing
	// ahead holds, per limiter, what a limiter written ahead (aheadLimiter) has been sent
	// and not yet measured; nil for one that decides at once. named says some limiter
	// wants key names, so every request carries its key's name.
	ahead []*aheadQueue
	named bool
}

// decide has every limiter of the pass decide r for key id, and the collectors measure.
func (p *pass) decide(id uint32, r *traffic.Request) {
	at := int64(r.At)
	for i, lim := range p.lims {
		if q := p.ahead[i]; q != nil {
			if q.send(id, p.epoch+at, r) {
				p.receive(i)
			}
			continue
		}
		d := lim.Allow(id, p.epoch+at, r.Cost)
		ref := p.cols[i].Observe(id, at, r.Cost, r.Class, d)
		p.progress[i].count(r.At)
		if p.dec != nil && p.writeErr == nil {
			p.writeErr = p.dec.write(p.name, lim.Name(), r, r.Key, d.Allowed, ref)
		}
	}
}

// receive measures the oldest request sent to limiter i, written ahead.
func (p *pass) receive(i int) {
	s, d := p.ahead[i].receive()
	ref := p.cols[i].Observe(s.id, int64(s.at), s.cost, s.class, d)
	p.progress[i].count(s.at)
	if p.dec != nil && p.writeErr == nil {
		r := traffic.Request{At: s.at, Key: s.key, Cost: s.cost}
		p.writeErr = p.dec.write(p.name, p.lims[i].Name(), &r, s.key, d.Allowed, ref)
	}
}

// drain measures every request still waiting for its decision.
func (p *pass) drain() {
	for i, q := range p.ahead {
		for q != nil && q.pending() > 0 {
			p.receive(i)
		}
	}
}

func runPass(sc *scenario.Scenario, lims []algorithms.Limiter, cols []*report.Collector, seed uint64, dec *DecisionWriter, progress []*progressCounter) (int64, error) {
	var loop sim.Loop
	p := newPass(sc, lims, cols, seed, dec, &loop)
	copy(p.progress, progress)
	loop.Run(sc.Horizon())
	p.drain()
	if p.writeErr != nil {
		return 0, fmt.Errorf("writing decisions: %w", p.writeErr)
	}
	return p.keys.heldBytes(), nil
}

// newPass builds the traffic of sc from seed and puts each source's first request on loop.
func newPass(sc *scenario.Scenario, lims []algorithms.Limiter, cols []*report.Collector, seed uint64, dec *DecisionWriter, loop *sim.Loop) *pass {
	sources := sc.Sources(sim.NewRNG(seed, sim.RunStream))
	p := &pass{name: sc.Name, lims: lims, cols: cols, epoch: sc.EpochTime().UnixNano(), keys: newKeySpace(sources), dec: dec,
		progress: make([]*progressCounter, len(lims)), ahead: make([]*aheadQueue, len(lims))}
	for i, lim := range lims {
		p.ahead[i] = newAheadQueue(lim)
		p.named = p.named || p.ahead[i] != nil
	}
	// Size the reference's per-key windows for the generated key space up front, so they
	// are not regrown (leaving the old arrays to the garbage collector) as keys arrive;
	// capped, so a sparse generator with a huge key space costs nothing it does not use.
	if n := min(p.keys.planned(), maxReservedKeys); n > 0 {
		for _, c := range cols {
			c.Reserve(n)
		}
		for _, lim := range lims {
			if r, ok := lim.(algorithms.Reserver); ok {
				r.Reserve(n)
			}
		}
	}
	for _, src := range sources {
		if is, ok := src.(traffic.IndexedSource); ok {
			if b := p.keys.blockOf(is); b != nil {
				f := &indexedFeeder{src: is, block: b, pass: p}
				if f.k, ok = is.NextIndexed(&f.req); ok {
					loop.At(f.req.At, f)
				}
				continue
			}
		}
		f := &feeder{src: src, pass: p}
		if src.Next(&f.req) {
			loop.At(f.req.At, f)
		}
	}
	return p
}

// feeder keeps one pending request of a source on the event loop; its keys are names.
type feeder struct {
	src  traffic.Source
	req  traffic.Request
	pass *pass
}

func (f *feeder) Fire(l *sim.Loop) {
	f.pass.decide(f.pass.keys.id(f.req.Key), &f.req)
	if f.src.Next(&f.req) {
		l.At(f.req.At, f)
	}
}

// indexedFeeder is a feeder for a source whose keys are numbered: key k's id is read from
// its block's table, with no string built or hashed unless a decisions file needs the name.
type indexedFeeder struct {
	src   traffic.IndexedSource
	block *keyBlock
	k     int
	req   traffic.Request
	pass  *pass
}

func (f *indexedFeeder) Fire(l *sim.Loop) {
	if f.pass.dec != nil || f.pass.named {
		f.req.Key = f.src.KeyName(f.k)
	}
	f.pass.decide(f.pass.keys.blockID(f.block, f.k), &f.req)
	var ok bool
	if f.k, ok = f.src.NextIndexed(&f.req); ok {
		l.At(f.req.At, f)
	}
}
