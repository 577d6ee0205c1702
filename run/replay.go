package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// ReplaySpec is a recorded log and how to replay it.
type ReplaySpec struct {
	// File names the log in reports and errors ("-" for stdin); Input is its content.
	File  string
	Input io.Reader
	// Format is the log's format; Fields map identities onto its columns (--field), and
	// FormatSpec defines a format that takes a definition (nginx's log_format).
	Format     traffic.LogFormat
	Fields     map[string]string
	FormatSpec string
	// Policy and Key are the single limit replayed, unless Layers are given: then each
	// layer is a limit, narrowest first, and Policy's window is the run's.
	Policy algorithms.Policy
	Key    string
	Layers []scenario.LimitSpec
	// TimeScale multiplies the gaps between requests (0.5 plays the log twice as fast).
	TimeScale float64
	// Reorder, Placement and Strict are as traffic.LogReaderOptions has them; the seed
	// of the placement is the run's.
	Reorder   time.Duration
	Placement string
	Strict    bool
	// ParseWorkers is how many goroutines parse the log (0: GOMAXPROCS); the results do
	// not depend on it.
	ParseWorkers int
	// Size is the log's size in bytes as stored, when known (0: not), for progress.
	Size int64
	// Shard, when not nil, replays only the requests of the shard's keys and returns
	// the shard's partial results (ReplayResult.Partial) for MergeReplay.
	Shard *Shard
}

// ReplayResult is what a replay returns: the report, the wall-clock time of t=0 and, for
// a shard, its partial results (the report then has none of its own).
type ReplayResult struct {
	Report  *report.Report
	Epoch   time.Time
	Partial *ReplayPartial
}

// keys are the key specs the replay keys on, the single key or the layers'.
func (s ReplaySpec) keys() []string {
	if len(s.Layers) == 0 {
		return []string{s.Key}
	}
	var out []string
	for _, l := range s.Layers {
		out = append(out, l.Key)
	}
	return out
}

// logConfig is what the replay reads of each line: the identities its keys read, who
// sent it for the harm figures, and the plan for per-plan quotas.
func (s ReplaySpec) logConfig() (traffic.LogConfig, error) {
	c := traffic.LogConfig{Fields: s.Fields, Spec: s.FormatSpec, Want: traffic.WantActor | traffic.WantPlan}
	for _, k := range s.keys() {
		keyer, err := traffic.ParseKeyer(k)
		if err != nil {
			return c, err
		}
		c.Want |= keyer.Reads()
		if h := keyer.Header(); h != "" && !containsString(c.Headers, h) {
			c.Headers = append(c.Headers, h)
		}
	}
	return c, nil
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Replay reads the log of spec and runs every chosen algorithm over it in the same pass,
// as Run runs a scenario, and returns the report, which says what was read of the log
// (report.ReplayLog), and the wall-clock time of t=0. It holds the limiters' state for
// the keys it has seen and the lines of one reorder window, never the log: a log of any
// length replays in the memory of its keys.
func Replay(spec ReplaySpec, o Options) (*ReplayResult, error) {
	cfg, err := spec.logConfig()
	if err != nil {
		return nil, err
	}
	seed := uint64(scenario.DefaultSeed)
	if o.Seed != nil {
		seed = *o.Seed
	}
	if !(spec.TimeScale > 0) || spec.TimeScale > 1e6 {
		return nil, fmt.Errorf("time scale must be positive, got %g", spec.TimeScale)
	}
	if err := spec.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	ro := traffic.LogReaderOptions{Format: spec.Format, Config: cfg, Workers: spec.ParseWorkers,
		Reorder: spec.Reorder, Placement: spec.Placement, Seed: seed, Strict: spec.Strict}
	if spec.Shard != nil {
		key, err := shardKey(spec)
		if err != nil {
			return nil, err
		}
		if ro.Keep, err = spec.Shard.keep(key); err != nil {
			return nil, err
		}
	}
	lr, err := traffic.OpenLog(spec.Input, ro)
	if err != nil {
		return nil, spec.lineError(err)
	}
	defer lr.Close()
	r := &replayRun{spec: spec, o: o, lr: lr, seed: seed, algs: o.Algorithms}
	if len(r.algs) == 0 {
		r.algs = algorithms.Defaults()
	}
	rep, err := r.run()
	if err != nil {
		return nil, spec.lineError(err)
	}
	out := &ReplayResult{Report: rep, Epoch: r.epoch}
	if spec.Shard != nil {
		out.Partial = &ReplayPartial{Version: 1, Shard: *spec.Shard, Epoch: r.epoch, Report: rep, Algorithms: r.partials}
		rep.Results = nil
	}
	return out, nil
}

// replayRun is one replay under way.
type replayRun struct {
	spec ReplaySpec
	o    Options
	lr   *traffic.LogReader
	seed uint64
	algs []string

	first   *traffic.LogLine // the first line, read to learn the epoch
	epoch   time.Time
	epochNs int64
	lastAt  time.Duration // the latest arrival replayed

	unkeyed       int64
	unkeyedReason string
	unkeyedLine   int

	partials []AlgorithmPartial // a shard's, in place of results
}

// window is the run's longest window: the horizon reaches that far past the last line.
func (r *replayRun) window() time.Duration {
	w := r.spec.Policy.Window
	for _, l := range r.spec.Layers {
		w = max(w, time.Duration(l.Window))
	}
	return w
}

func (r *replayRun) run() (*report.Report, error) {
	// t=0 is the minute the first line falls in: the first line out of the reorder
	// window is the earliest of the log, and every shard's reader knows it.
	r.first = r.lr.NextLine()
	st := r.lr.Stats()
	if r.first == nil {
		if err := r.lr.Err(); err != nil {
			return nil, err
		}
		// A shard whose keys the log never names still reports, empty: the merge needs
		// every shard.
		if r.spec.Shard == nil || st.OtherShard == 0 {
			if err := traffic.CheckUnread(st, r.spec.Format.Name); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%s: no requests", r.spec.File)
		}
	}
	r.epoch = time.Unix(0, st.First).UTC().Truncate(time.Minute)
	r.epochNs = r.epoch.UnixNano()
	if err := sim.CheckRun(r.epoch, 0, r.window()); err != nil {
		return nil, fmt.Errorf("line %d: %w", st.FirstLine, err)
	}
	rep := &report.Report{
		Scenario: ReplayName(r.spec.File),
		Seed:     r.seed,
		Policy:   report.Policy{Limit: r.spec.Policy.Limit, Window: report.Duration(r.spec.Policy.Window), Burst: r.spec.Policy.EffectiveBurst()},
		Key:      r.spec.Key,
	}
	var err error
	if len(r.spec.Layers) == 0 {
		err = r.runPass(rep)
	} else {
		err = r.runEngines(rep)
	}
	if err != nil {
		return nil, err
	}
	st = r.lr.Stats()
	if err := r.checkSpan(st); err != nil {
		return nil, err
	}
	if err := traffic.CheckUnread(st, r.spec.Format.Name); err != nil {
		return nil, err
	}
	rep.Description = fmt.Sprintf("replay of %s: %d requests", r.spec.File, st.Used)
	rep.Log = r.spec.summary(st)
	rep.UnreadLines = st.Unreadable
	for _, p := range st.Problems {
		rep.UnreadLineProblems = append(rep.UnreadLineProblems, p.String())
	}
	return rep, nil
}

// at places a line on the run's timeline, as a scenario made from a log always has:
// its time since the epoch, times the time scale.
func (r *replayRun) at(t int64) (time.Duration, error) {
	d := float64(t-r.epochNs) * r.spec.TimeScale
	if t < r.epochNs || d >= math.MaxInt64 || t-r.epochNs < 0 {
		st := r.lr.Stats()
		return 0, r.spanError(st)
	}
	return time.Duration(d), nil
}

// spanError is the error of a log whose span the clock cannot run, as the checks of a
// whole log give it.
func (r *replayRun) spanError(st traffic.LogStats) error {
	first, final := time.Unix(0, st.First).UTC(), time.Unix(0, st.Last).UTC()
	if err := sim.CheckSpan(first, final); err != nil {
		return fmt.Errorf("lines %d to %d: %w", st.FirstLine, st.LastLine, err)
	}
	return fmt.Errorf("lines %d to %d at a time scale of %g: %s is more than the virtual clock runs (about 292 years)",
		st.FirstLine, st.LastLine, r.spec.TimeScale, final.Sub(first))
}

// checkSpan checks, once the log is read, that the clock can run all of it.
func (r *replayRun) checkSpan(st traffic.LogStats) error {
	first, final := time.Unix(0, st.First).UTC(), time.Unix(0, st.Last).UTC()
	if err := sim.CheckSpan(first, final); err != nil {
		return fmt.Errorf("lines %d to %d: %w", st.FirstLine, st.LastLine, err)
	}
	if span := float64(final.Sub(r.epoch)) * r.spec.TimeScale; span >= math.MaxInt64 {
		return r.spanError(st)
	}
	if err := sim.CheckRun(r.epoch, r.horizon(st)-r.window(), r.window()); err != nil {
		return fmt.Errorf("lines %d to %d: %w", st.FirstLine, st.LastLine, err)
	}
	return nil
}

// horizon is the run's end: a window past the latest line of the log (of every shard).
func (r *replayRun) horizon(st traffic.LogStats) time.Duration {
	last := time.Duration(float64(st.Last-r.epochNs) * r.spec.TimeScale)
	return last + r.window()
}

// lines calls f with every line of the log, from the first, placed on the timeline and
// delivered as the server saw it, until f fails, the log ends, or the run's context is
// done; a read the log's reader could not finish is the error.
func (r *replayRun) lines(f func(req *traffic.Request, line int) error) error {
	network := traffic.NewNetwork(0)
	l := r.first
	for n := 0; l != nil; n++ {
		at, err := r.at(l.Time)
		if err != nil {
			return err
		}
		req := &l.Request
		req.At = at
		network.Deliver(req)
		r.lastAt = max(r.lastAt, at)
		if err := f(req, l.Line); err != nil {
			return err
		}
		if n%4096 == 4095 && r.o.Context != nil {
			if err := r.o.Context.Err(); err != nil {
				return context.Cause(r.o.Context)
			}
		}
		l = r.lr.NextLine()
	}
	return r.lr.Err()
}

// runPass replays a single limit through one pass over the log: the key of each line is
// found once, the limiters decide in groups beside one another, and the collectors share
// one reference, as a plain scenario's run does.
func (r *replayRun) runPass(rep *report.Report) error {
	pol := r.spec.Policy
	bs := builders(r.algs, r.o)
	lims := make([]algorithms.Limiter, 0, len(bs))
	cols := make([]*report.Collector, len(bs))
	defer func() { finishAll(lims) }()
	for i, b := range bs {
		lim, err := b.build(pol)
		if err != nil {
			return fmt.Errorf("replay %s: %w", r.spec.File, err)
		}
		lims = append(lims, lim)
		cols[i] = report.NewCollector(pol.Limit, pol.Window, time.Second)
		cols[i].RecordOpenTimeline(r.window())
		if r.spec.Shard != nil {
			cols[i].RecordArrivals()
			cols[i].RecordShardWindow()
		}
	}
	keyer, err := traffic.ParseKeyer(r.spec.Key)
	if err != nil {
		return err
	}
	group, err := report.NewGroup(cols)
	if err != nil {
		return err
	}
	// A log of hours sees keys come and go: the reference keeps room for the keys active
	// at once, not for every key that was ever busy.
	group.ReleaseIdleWindows()
	p := &pass{name: rep.Scenario, lims: lims, group: group, epoch: r.epochNs, replay: true, ordered: r.spec.Shard != nil, ctx: r.o.Context,
		delays: make([]time.Duration, len(lims)), progress: r.watch(rep.Scenario, len(lims))}
	for _, lim := range lims {
		p.admit = append(p.admit, algorithms.AdmitterOf(lim))
		// A log's keys are many and its lines in no order of key: each limiter reads
		// ahead the state of a chunk's keys before it decides them.
		t, _ := lim.(algorithms.Toucher)
		p.touch = append(p.touch, t)
		a, _ := lim.(aheadLimiter)
		p.ahead = append(p.ahead, a)
		p.named = p.named || a != nil
		p.harms = append(p.harms, report.NewHarm(pol.Window))
	}
	var spool *decisionSpool
	if r.o.Decisions != nil {
		if spool, err = newDecisionSpool(r.o.Decisions, len(lims)); err != nil {
			return err
		}
		defer spool.close()
		p.decs = spool.writers
	}
	keys := newReplayKeys()
	p.produce = func() error {
		names := p.keepNames()
		// A chunk's keys are numbered as it is handed on, all at once (replayKeys.number),
		// rather than line by line: the lookups of a whole chunk overlap.
		pending := keys.pending(chunkSize)
		handOff := p.handOff
		p.handOff = func(c *chunk) *chunk {
			keys.number(c.ids[:c.n], pending[:c.n], c.unkeyed[:c.n])
			return handOff(c)
		}
		return r.lines(func(req *traffic.Request, line int) error {
			k, err := keyer.Key(req)
			if err != nil {
				r.noteUnkeyed(err, line)
				pending[p.fill.n] = traffic.Key{}
				p.emitReplay(0, req, "", true, line)
				return nil
			}
			var name string
			if names {
				name = k.String()
			}
			pending[p.fill.n] = k
			p.emitReplay(0, req, name, false, line)
			return nil
		})
	}
	if _, err := p.run(r.o.Workers); err != nil {
		return err
	}
	if err := finishAll(lims); err != nil {
		return fmt.Errorf("replay %s: %w", r.spec.File, err)
	}
	if spool != nil {
		if err := spool.finish(); err != nil {
			return err
		}
	}
	horizon := r.horizon(r.lr.Stats())
	for i, lim := range lims {
		cols[i].CloseTimeline(horizon)
		if r.spec.Shard != nil {
			r.partials = append(r.partials, AlgorithmPartial{Algorithm: lim.Name(), Totals: report.TotalsOf(lim), Collector: cols[i].Partial(),
				Harm: p.harms[i].Partial(), Unkeyed: r.unkeyed, UnkeyedLine: r.unkeyedLine, UnkeyedReason: r.unkeyedReason})
			continue
		}
		res := cols[i].Result(lim)
		res.Unkeyed, res.UnkeyedReason = r.unkeyed, r.unkeyedReason
		p.harms[i].Fill(&res)
		rep.Results = append(rep.Results, res)
	}
	if r.o.Memory {
		rep.Memory = report.MemoryOf(lims, cols, keys.heldBytes())
		rep.Memory.AddBuffers(r.lr.BufferBytes() + r.lr.ChunkBytes() + passBytes(len(lims), p.keepNames()) + keys.pendingBytes())
	}
	return nil
}

func (r *replayRun) noteUnkeyed(err error, line int) {
	r.unkeyed++
	if r.unkeyedReason == "" {
		r.unkeyedReason, r.unkeyedLine = err.Error(), line
	}
}

// watch reports the replay's progress: the bytes of the log read, of how many, and the
// requests decided.
func (r *replayRun) watch(name string, limiters int) *progressCounter {
	if r.o.Progress == nil {
		return nil
	}
	label := fmt.Sprintf("%d algorithms", limiters)
	return &progressCounter{report: r.o.Progress, base: Progress{Scenario: name, Algorithm: label, Count: 1, Bytes: r.lr.BytesRead, TotalBytes: r.spec.Size}}
}

// emitReplay adds a replayed request to the chunk being filled.
func (p *pass) emitReplay(id uint32, r *traffic.Request, name string, unkeyed bool, line int) {
	c := p.fill
	i := c.n
	c.unkeyed[i], c.actors[i], c.lines[i] = unkeyed, r.Actor, line
	p.emit(id, r, name)
}

// runEngines replays layered limits: every algorithm's engine decides each line through
// every layer, all of them in step over one read of the log.
func (r *replayRun) runEngines(rep *report.Report) error {
	first := r.spec.Layers[0].Policy()
	rep.Policy = report.Policy{Limit: first.Limit, Window: report.Duration(first.Window), Burst: first.EffectiveBurst()}
	var keys []string
	for _, l := range r.spec.Layers {
		keys = append(keys, l.Name+"="+l.Key)
	}
	rep.Key = strings.Join(keys, "+")
	e := scenario.Epoch(r.epoch)
	sc := &scenario.Scenario{Name: rep.Scenario, Epoch: &e, BackendWindow: scenario.Duration(time.Second), Limits: r.spec.Layers}
	bs := builders(r.algs, r.o)
	engines := make([]*engine, 0, len(bs))
	defer func() {
		for _, eng := range engines {
			eng.finish()
		}
	}()
	for _, b := range bs {
		eng, err := newEngine(sc, b, r.spec.Layers, true, nil)
		if err != nil {
			return fmt.Errorf("replay %s: %w", r.spec.File, err)
		}
		eng.layers[0].cells[0].col.RecordOpenTimeline(r.window())
		for _, c := range eng.cells {
			c.col.ReleaseIdleWindows()
		}
		if r.spec.Shard != nil {
			eng.outcome.RecordArrivals()
			eng.layers[0].cells[0].col.RecordShardWindow()
		}
		engines = append(engines, eng)
	}
	var spool *decisionSpool
	if r.o.Decisions != nil {
		var err error
		if spool, err = newDecisionSpool(r.o.Decisions, len(engines)); err != nil {
			return err
		}
		defer spool.close()
	}
	progress := r.watch(rep.Scenario, len(engines))
	var one traffic.Request
	err := r.lines(func(req *traffic.Request, line int) error {
		for i, eng := range engines {
			one = *req
			eng.line = line
			allowed, key, ref := eng.decide(&one)
			if spool != nil {
				if err := spool.writers[i].write(rep.Scenario, bs[i].name, &one, key.String(), allowed, ref); err != nil {
					return fmt.Errorf("writing decisions: %w", err)
				}
			}
		}
		progress.count(req.At)
		return nil
	})
	if err != nil {
		return err
	}
	for _, eng := range engines {
		if err := eng.finish(); err != nil {
			return fmt.Errorf("replay %s: %w", r.spec.File, err)
		}
	}
	if spool != nil {
		if err := spool.finish(); err != nil {
			return err
		}
	}
	horizon := r.horizon(r.lr.Stats())
	for i, eng := range engines {
		eng.layers[0].cells[0].col.CloseTimeline(horizon)
		if r.spec.Shard != nil {
			r.partials = append(r.partials, eng.partial(bs[i].name))
			continue
		}
		rep.Results = append(rep.Results, eng.result(bs[i].name))
	}
	return nil
}

// lineError places a strict read's first unread line in the file.
func (s ReplaySpec) lineError(err error) error {
	var le *traffic.LineError
	if errors.As(err, &le) {
		le.File = s.File
	}
	return err
}

// summary is the report's account of the log.
func (s ReplaySpec) summary(st traffic.LogStats) *report.ReplayLog {
	l := &report.ReplayLog{
		File: s.File, Format: s.Format.Name, Lines: st.Lines, Used: st.Used,
		Unreadable: st.Unreadable, OutOfOrder: st.Late, OtherShards: st.OtherShard,
		ReorderWindow: report.Duration(s.Reorder), WholeSeconds: st.Whole, Placement: s.placement(),
	}
	if st.Used+st.OtherShard > 0 {
		l.From = time.Unix(0, st.First).UTC().Format(time.RFC3339Nano)
		l.To = time.Unix(0, st.Last).UTC().Format(time.RFC3339Nano)
	}
	if st.Whole > 0 {
		l.PlacementEffect = traffic.PlacementDocs[l.Placement]
	}
	return l
}

func (s ReplaySpec) placement() string {
	if s.Placement == "" {
		return "start"
	}
	return s.Placement
}

// ReplayName is the name a replay's results go under: the log's file name without its
// extensions (.log.gz too), "stdin" for "-".
func ReplayName(file string) string {
	if file == "-" {
		return "stdin"
	}
	name := filepath.Base(file)
	name = strings.TrimSuffix(name, ".gz")
	return strings.TrimSuffix(name, filepath.Ext(name))
}
