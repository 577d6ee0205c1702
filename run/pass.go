package run

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// runPasses decides the scenario's traffic with every limiter, each measured by its
// collector (lims[i] by cols[i]), in one pass over the traffic (see stages.go): the
// traffic is generated once, each group of limiters decides it on a worker of its own,
// and the collectors, sharing one reference, measure it in order. Every limiter and
// collector sees exactly the requests it would see alone, in the same order, so the
// results are the same for any number of workers. With a decisions file each limiter gets
// its own pass, one after the other, so the rows stay grouped by algorithm. It returns the
// bytes of one pass's interned key names.
func runPasses(sc *scenario.Scenario, lims []algorithms.Limiter, cols []*report.Collector, seed uint64, o Options) (int64, error) {
	if o.Decisions == nil {
		label := lims[0].Name()
		if len(lims) > 1 {
			label = fmt.Sprintf("%d algorithms", len(lims))
		}
		p, err := newPass(sc, lims, cols, seed, nil, o.watch(sc, label, 0, 1))
		if err != nil {
			return 0, err
		}
		p.ctx = o.Context
		return p.run(o.Workers)
	}
	var interned int64
	for i := range lims {
		p, err := newPass(sc, lims[i:i+1], cols[i:i+1], seed, o.Decisions, o.watch(sc, lims[i].Name(), i, len(lims)))
		if err != nil {
			return 0, err
		}
		p.ctx = o.Context
		if interned, err = p.run(o.Workers); err != nil {
			return 0, err
		}
	}
	return interned, nil
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

// maxReservedKeys bounds the per-key state reserved before a run: as many keys as the
// blocks of generated keys can number (maxBlockKeys). Reserved room that no key reaches
// is never touched, so it costs address space rather than resident memory.
const maxReservedKeys = maxBlockKeys

// pass is one walk over the traffic with a group of limiters.
type pass struct {
	name  string
	lims  []algorithms.Limiter
	admit []algorithms.Admitter
	// touch holds, per limiter, the limiter as a Toucher, nil where it is none; a pass
	// without any (a scenario's) leaves it nil.
	touch    []algorithms.Toucher
	group    *report.Group
	epoch    int64 // t=0 in Unix nanoseconds, for the limiters' aligned windows
	horizon  time.Duration
	keys     *keySpace
	loop     sim.Loop
	dec      *DecisionWriter
	writeErr error
	progress *progressCounter // nil counts nothing
	// ctx, when not nil, stops the walk between two events once it is done; stopErr is
	// its cause then.
	ctx     context.Context
	stopErr error

	// ahead holds, per limiter, the limiter written ahead of its answers (aheadLimiter,
	// one the user brings), nil for a built-in; named says one of them wants key names,
	// so every request keeps its key's name.
	ahead []aheadLimiter
	named bool

	fill    *chunk              // the chunk the generator is filling
	handOff func(*chunk) *chunk // passes a full chunk on and returns an empty one
	delays  []time.Duration     // scratch of the measuring stage: one request's delays

	// A replay's pass (replay.go) reads its traffic from a log: produce takes the event
	// loop's place and fills the chunks itself. Its requests may be unkeyed (refused
	// before any limiter sees them) and name who sent them, for each limiter's harm; each
	// limiter's decisions go to its own writer of decs.
	produce func() error
	replay  bool
	ordered bool // a shard's: the collectors learn each request's line (TimelineOrder)
	harms   []*report.Harm
	decs    []*DecisionWriter
}

// newPass builds the traffic of sc from seed and puts each source's first request on the
// pass's loop.
func newPass(sc *scenario.Scenario, lims []algorithms.Limiter, cols []*report.Collector, seed uint64, dec *DecisionWriter, progress *progressCounter) (*pass, error) {
	group, err := report.NewGroup(cols)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	sources := sc.Sources(sim.NewRNG(seed, sim.RunStream))
	p := &pass{name: sc.Name, lims: lims, group: group, epoch: sc.EpochTime().UnixNano(), horizon: sc.Horizon(),
		keys: newKeySpace(sources), dec: dec, progress: progress, delays: make([]time.Duration, len(lims))}
	for _, lim := range lims {
		p.admit = append(p.admit, algorithms.AdmitterOf(lim))
		a, _ := lim.(aheadLimiter)
		p.ahead = append(p.ahead, a)
		p.named = p.named || a != nil
	}
	// Size the per-key state for the generated key space up front, so it is not regrown
	// (leaving the old arrays to the garbage collector) as keys arrive.
	if n := min(p.keys.planned(), maxReservedKeys); n > 0 {
		group.Reserve(n)
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
					p.loop.At(f.req.At, f)
				}
				continue
			}
		}
		f := &feeder{src: src, pass: p}
		if src.Next(&f.req) {
			p.loop.At(f.req.At, f)
		}
	}
	return p, nil
}

// keepNames says whether the chunks keep key names: for a decisions file, or for a
// limiter that names its keys (a user's).
func (p *pass) keepNames() bool { return p.dec != nil || p.named || p.decs != nil }

// emit adds a generated request for key id (named name, kept for a decisions file or a
// limiter of the user's only) to the chunk being filled, handing the chunk on when it is
// full.
func (p *pass) emit(id uint32, r *traffic.Request, name string) {
	c := p.fill
	i := c.n
	c.ids[i], c.at[i], c.cost[i], c.class[i] = id, r.At, r.Cost, r.Class
	if c.names != nil {
		c.names[i] = name
	}
	if c.n++; c.n == len(c.ids) {
		p.fill = p.handOff(c)
	}
}

// feeder keeps one pending request of a source on the event loop; its keys are names.
type feeder struct {
	src  traffic.Source
	req  traffic.Request
	pass *pass
}

func (f *feeder) Fire(l *sim.Loop) {
	f.pass.emit(f.pass.keys.id(f.req.Key), &f.req, f.req.Key)
	if f.src.Next(&f.req) {
		l.At(f.req.At, f)
	}
}

// indexedFeeder is a feeder for a source whose keys are numbered: key k's id is read from
// its block's table, with no string built or hashed unless a decisions file or a limiter
// of the user's needs the name.
type indexedFeeder struct {
	src   traffic.IndexedSource
	block *keyBlock
	k     int
	req   traffic.Request
	pass  *pass
}

func (f *indexedFeeder) Fire(l *sim.Loop) {
	var name string
	if f.pass.keepNames() {
		name = f.src.KeyName(f.k)
	}
	f.pass.emit(f.pass.keys.blockID(f.block, f.k), &f.req, name)
	var ok bool
	if f.k, ok = f.src.NextIndexed(&f.req); ok {
		l.At(f.req.At, f)
	}
}
