package report

import (
	"errors"
	"math"
	"slices"
	"time"
)

// MaxTimelineBins bounds a timeline's length: a run of any duration keeps at most this many
// bins per algorithm, so the collector's memory for charts grows with bins, not requests.
const MaxTimelineBins = 1000

// binWidths are the bin widths a timeline picks from: round numbers, so that axis ticks
// and CSV rows fall on readable times.
var binWidths = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// TimelineBin returns the bin width for a run of the given horizon: the smallest round
// width that keeps the timeline within MaxTimelineBins (a day per bin past that).
func TimelineBin(horizon time.Duration) time.Duration {
	for _, w := range binWidths {
		if int64(horizon)/int64(w) < MaxTimelineBins {
			return w
		}
	}
	w := binWidths[len(binWidths)-1]
	for int64(horizon)/int64(w) >= MaxTimelineBins {
		w *= 2
	}
	return w
}

// Timeline is one algorithm's run as a bounded time series. Bin i covers
// [i·Bin, (i+1)·Bin) from the scenario's start.
type Timeline struct {
	// Bin is the width of every bin.
	Bin time.Duration
	// Admitted and Refused count the requests decided in each bin.
	Admitted, Refused []int64
	// WindowAdmitted is, per bin, the admitted cost in the trailing window of the busiest
	// key: the largest trailing-window count any key reached at an admission in the bin,
	// and the count at the bin's start of the key that led before it (so a plateau between
	// bursts stays drawn). Compare it with the limit: above it, the promise is broken.
	WindowAdmitted []int64
	// Admissions are the run's admitted requests one by one, for zooming in on a moment
	// the bins are too wide to show; nil when the run admitted more than
	// MaxExactAdmissions (see zoom.go).
	Admissions []Admission
	// Shard is, in a shard's partial results, what the merge needs to find WindowAdmitted
	// again over all shards (RecordShardWindow); nil elsewhere.
	Shard *ShardWindow `json:"shard_window,omitempty"`
}

// ShardWindow is what a shard's timeline records for the busiest-window column of one run
// over all shards' keys to be found again (mergeWindowColumn). Bin by bin, one run's
// column is the larger of the leading key's count at the bin's start and the largest
// count at an admission in the bin; the lead passes to the key of the last admission
// that reached the bin's largest, when that is at least the leader's count. The leader
// of one run is always the key some shard saw reach its own largest in a bin, so per bin
// a shard records its own largest (Top, 0 for no admission), when the last admission
// that reached it came (TopAt, the run's time in ns, then TopOrder, its place at that
// instant: the log line), and the counts its key held at the starts of the bins after
// (Trail). A trail ends after the first bin in which the shard itself reached as much as
// the key held at the bin's start — one run's lead has passed on by then, whoever held
// it — or before a count of 0, which then stays 0 until the key's next admission, which
// ends it too. So a shard records three numbers a bin and a trail no longer than the run
// of bins its key may still lead: bounded by the bins, never by the lines.
type ShardWindow struct {
	Top      []int64   `json:"top"`
	TopAt    []int64   `json:"top_at"`
	TopOrder []int64   `json:"top_order"`
	Trail    [][]int64 `json:"trail"`
}

// RecordShardWindow makes a collector's open timeline (RecordOpenTimeline, called first)
// keep the ShardWindow of a shard's run, for the merge of the shards. Call TimelineOrder
// before every decision, so that ties at one instant are broken as one run breaks them.
func (c *Collector) RecordShardWindow() {
	if o, ok := c.timeline.(*openTimeline); ok {
		for _, w := range o.widths {
			w.sw = &ShardWindow{}
		}
	}
}

// TimelineOrder tells a collector recording a ShardWindow the place, among the requests
// of its instant, of the request it is about to observe: its log line, which orders the
// requests of one instant in every shard as in one run. Other collectors ignore it.
func (c *Collector) TimelineOrder(n int64) {
	if o, ok := c.timeline.(*openTimeline); ok {
		o.order = n
	}
}

// TimelineOrder is Collector.TimelineOrder for every collector of the group.
func (g *Group) TimelineOrder(n int64) {
	for _, c := range g.cols {
		c.TimelineOrder(n)
	}
}

// TimelineAt brings the collector's timeline to t before a decision at t changes any
// window. Bins are sampled at their starts as the windows stood there, so a bin start's
// sample is the same whichever key's decision is the first past it — in one run or in
// a shard that holds only some of its keys.
func (c *Collector) TimelineAt(t int64) {
	if c.timeline != nil {
		c.timeline.at(c, t)
	}
}

// timelineRecorder fills a Timeline as the collector observes decisions.
type timelineRecorder struct {
	exact   exactLog
	tl      Timeline
	current int // index of the bin the last decision fell in
	leader  int // key with the largest count seen in the current bin; -1 when none yet

	// The bin binOf found last, covering [binStart, binEnd): decisions come in time order,
	// so most need no division to find their bin.
	bin              int
	binStart, binEnd int64
}

// RecordTimeline makes the collector keep a timeline of a run that ends at horizon. Call it
// before the first Observe; without it Result carries no timeline.
func (c *Collector) RecordTimeline(horizon time.Duration) {
	bin := TimelineBin(horizon)
	// Bins cover [0, horizon); a decision at the horizon itself counts in the last one.
	n := max(int((int64(horizon)+int64(bin)-1)/int64(bin)), 1)
	c.timeline = &timelineRecorder{
		tl: Timeline{
			Bin:            bin,
			Admitted:       make([]int64, n),
			Refused:        make([]int64, n),
			WindowAdmitted: make([]int64, n),
		},
		leader: -1,
	}
}

// at samples the bin starts up to t, before a decision at t.
func (r *timelineRecorder) at(c *Collector, t int64) {
	if i := r.binOf(t); i != r.current {
		r.advance(c, i)
	}
}

// observe is called by Observe after the decision (and at before it); sum is key's
// trailing-window count at t, holding the request if it was admitted.
func (r *timelineRecorder) observe(c *Collector, key uint32, t int64, allowed bool, sum int64) {
	i := r.binOf(t)
	if i != r.current {
		r.advance(c, i)
	}
	if allowed {
		r.exact.record(t, key, sum)
		r.tl.Admitted[i]++
		if sum >= r.tl.WindowAdmitted[i] {
			r.tl.WindowAdmitted[i] = sum
			r.leader = int(key)
		}
	} else {
		r.tl.Refused[i]++
	}
}

func (r *timelineRecorder) binOf(t int64) int {
	if t >= r.binStart && t < r.binEnd {
		return r.bin
	}
	i := int(t / int64(r.tl.Bin))
	if i >= 0 && i < len(r.tl.Admitted)-1 && t >= 0 {
		r.bin, r.binStart, r.binEnd = i, int64(i)*int64(r.tl.Bin), int64(i+1)*int64(r.tl.Bin)
	}
	return min(max(i, 0), len(r.tl.Admitted)-1)
}

// advance moves the recorder to bin i, sampling the leading key's trailing count at the
// start of every bin it passes, so quiet bins still show what the window holds.
func (r *timelineRecorder) advance(c *Collector, i int) {
	for r.current < i {
		r.current++
		if r.leader < 0 {
			continue
		}
		start := int64(r.current) * int64(r.tl.Bin)
		// The window at the bin's start is (start−W, start]. It is read without dropping
		// what has left it: the windows may be shared with the collectors of a group,
		// whose timelines read the same key at the same bin starts.
		slot := c.windows.slot(uint32(r.leader))
		r.tl.WindowAdmitted[r.current] = max(r.tl.WindowAdmitted[r.current], c.windows.sumAfter(slot, c.member, start-c.window))
	}
}

// finish samples the bins after the last decision.
func (r *timelineRecorder) finish(c *Collector) *Timeline {
	r.advance(c, len(r.tl.Admitted)-1)
	tl := r.tl
	tl.Admissions = r.exact.kept()
	return &tl
}

// timelineObserver is what a collector feeds its decisions to for a timeline: a recorder
// that knows the run's horizon (timelineRecorder) or one that learns it at the end
// (openTimeline).
type timelineObserver interface {
	at(c *Collector, t int64)
	observe(c *Collector, key uint32, t int64, allowed bool, sum int64)
	finish(c *Collector) *Timeline
}

// RecordOpenTimeline makes the collector keep a timeline of a run whose horizon it learns
// only at the end (a log read as it is replayed), for a policy window of window. Call
// CloseTimeline with the horizon before Result: the timeline is then exactly the one
// RecordTimeline(horizon) would have recorded.
func (c *Collector) RecordOpenTimeline(window time.Duration) {
	c.timeline = newOpenTimeline(int64(window))
}

// CloseTimeline tells an open timeline the run's horizon; it does nothing to another.
func (c *Collector) CloseTimeline(horizon time.Duration) {
	if o, ok := c.timeline.(*openTimeline); ok {
		o.horizon = int64(horizon)
	}
}

// openTimeline records a timeline for every bin width the horizon may still choose
// (TimelineBin), so that at the end it holds the one the horizon chose, bin for bin as a
// timelineRecorder would have recorded it. Decisions go into base bins, whose width is
// the greatest common divisor of the widths still possible, so every bin of every width
// is a run of whole base bins; each width closes its bins from the base bins and samples
// its own leading key at its own bin starts, at the decision that first falls past them,
// just when a timelineRecorder would. A width leaves once the run has gone too far for
// the horizon to choose it (a horizon of at least 1000 of its bins), and the base bins
// merge into wider ones as the finest widths leave: the recorder holds a few thousand
// bins whatever the run's length.
type openTimeline struct {
	window  int64
	horizon int64 // set by CloseTimeline

	widths []*widthTimeline // the widths still possible, finest first
	base   int64
	bins   []baseBin
	cur    int   // the base bin of the last decision
	latest int64 // the time of the last decision
	exact  exactLog

	order int64 // the place of the decision observed next at its instant (TimelineOrder)
}

// baseBin is what a base bin saw: its decisions and its largest trailing-window count at
// an admission (0: none) with the key that reached it last, when and at which order.
type baseBin struct {
	admitted, refused int64
	max               int64
	maxKey            uint32
	maxAt, maxOrder   int64
}

// widthTimeline is one width's bins as far as they are closed.
type widthTimeline struct {
	width  int64
	cur    int     // the bin the last decision fell in
	sample []int64 // per bin: the leader's count at the bin's start
	closed []int64 // per closed bin: its WindowAdmitted
	leader int     // the leading key after the last closed bin; -1 none

	sw    *ShardWindow // a shard's record, when the timeline keeps one
	trail []liveTrail  // the trails still being recorded
}

// liveTrail is a trail of a ShardWindow being recorded: that of the top key of bin.
type liveTrail struct {
	bin int
	key uint32
}

// timelineWidths are the widths TimelineBin can choose, finest first.
func timelineWidths() []time.Duration {
	out := slices.Clone(binWidths)
	for w := binWidths[len(binWidths)-1] * 2; w > 0 && w < time.Duration(math.MaxInt64/MaxTimelineBins); w *= 2 {
		out = append(out, w)
	}
	return out
}

func newOpenTimeline(window int64) *openTimeline {
	o := &openTimeline{window: window}
	for _, w := range timelineWidths() {
		o.widths = append(o.widths, &widthTimeline{width: int64(w), leader: -1, sample: []int64{0}})
	}
	o.retire(0)
	o.base = o.gcd()
	return o
}

func (o *openTimeline) gcd() int64 {
	g := int64(0)
	for _, w := range o.widths {
		a, b := g, w.width
		for b != 0 {
			a, b = b, a%b
		}
		g = a
	}
	return g
}

// retire drops the widths a horizon reached by decisions at t cannot choose: the horizon
// is at least t plus a window, and TimelineBin takes a width only for a horizon of fewer
// than MaxTimelineBins of its bins.
func (o *openTimeline) retire(t int64) (dropped bool) {
	for len(o.widths) > 1 && t+o.window >= MaxTimelineBins*o.widths[0].width {
		o.widths = o.widths[1:]
		dropped = true
	}
	return dropped
}

// at moves the recorder to t, before a decision at t.
func (o *openTimeline) at(c *Collector, t int64) {
	t = max(t, 0)
	if t != o.latest || len(o.bins) == 0 {
		o.latest = t
		o.move(c, t)
	}
}

func (o *openTimeline) observe(c *Collector, key uint32, t int64, allowed bool, sum int64) {
	o.at(c, t)
	t = max(t, 0)
	b := &o.bins[o.cur]
	if allowed {
		o.exact.record(t, key, sum)
		b.admitted++
		if sum >= b.max {
			b.max, b.maxKey, b.maxAt, b.maxOrder = sum, key, t, o.order
		}
	} else {
		b.refused++
	}
}

// move brings the recorder to the base bin of a decision at t: each width closes the bins
// the decision has passed and samples its leader at the starts it has passed.
func (o *openTimeline) move(c *Collector, t int64) {
	if i := int(t / o.base); i != o.cur || len(o.bins) == 0 {
		for _, w := range o.widths {
			if j := int(t / w.width); j != w.cur {
				o.advance(c, w, j)
			}
		}
	}
	if o.retire(t) {
		if g := o.gcd(); g != o.base {
			o.merge(g)
		}
	}
	o.cur = int(t / o.base)
	for len(o.bins) <= o.cur {
		o.bins = append(o.bins, baseBin{})
	}
}

// merge regroups the base bins into bins of width g, a multiple of the base.
func (o *openTimeline) merge(g int64) {
	r := int(g / o.base)
	var out []baseBin
	for i, b := range o.bins {
		if i%r == 0 {
			out = append(out, baseBin{})
		}
		m := &out[len(out)-1]
		m.admitted += b.admitted
		m.refused += b.refused
		if b.max > 0 && b.max >= m.max {
			m.max, m.maxKey, m.maxAt, m.maxOrder = b.max, b.maxKey, b.maxAt, b.maxOrder
		}
	}
	o.bins, o.base = out, g
}

// advance moves width w to its bin j: it closes each bin it leaves and samples the leader
// at the start of each bin it enters.
func (o *openTimeline) advance(c *Collector, w *widthTimeline, j int) {
	for w.cur < j {
		o.close(w)
		w.cur++
		start := int64(w.cur) * w.width
		var s int64
		if w.leader >= 0 {
			slot := c.windows.slot(uint32(w.leader))
			s = c.windows.sumAfter(slot, c.member, start-c.window)
		}
		w.sample = append(w.sample, s)
		if w.sw != nil {
			o.extendTrails(c, w, start)
		}
	}
}

// extendTrails adds to each live trail of w its key's count at start, the start of w's
// current bin; a trail whose count is 0 ends there.
func (o *openTimeline) extendTrails(c *Collector, w *widthTimeline, start int64) {
	live := w.trail[:0]
	for _, l := range w.trail {
		s := c.windows.sumAfter(c.windows.slot(l.key), c.member, start-c.window)
		if s == 0 {
			continue
		}
		w.sw.Trail[l.bin] = append(w.sw.Trail[l.bin], s)
		live = append(live, l)
	}
	w.trail = live
}

// closeTrails records w's current bin in its ShardWindow: its top, and the trails the top
// ends; the bin's top key starts a trail of its own.
func (w *widthTimeline) closeTrails(top int64, key uint32, at, order int64) {
	w.sw.Top = append(w.sw.Top, top)
	w.sw.TopAt = append(w.sw.TopAt, at)
	w.sw.TopOrder = append(w.sw.TopOrder, order)
	w.sw.Trail = append(w.sw.Trail, nil)
	if top == 0 {
		return
	}
	live := w.trail[:0]
	for _, l := range w.trail {
		// The trail holds the count at this bin's start last: it is live.
		if tr := w.sw.Trail[l.bin]; top < tr[len(tr)-1] {
			live = append(live, l)
		}
	}
	w.trail = append(live, liveTrail{bin: w.cur, key: key})
}

// close closes w's current bin from the base bins it covers.
func (o *openTimeline) close(w *widthTimeline) {
	per := w.width / o.base
	from := int64(w.cur) * per
	var top, at, order int64
	var key uint32
	for i := from; i < from+per && i < int64(len(o.bins)); i++ {
		if b := o.bins[i]; b.max > 0 && b.max >= top {
			top, key, at, order = b.max, b.maxKey, b.maxAt, b.maxOrder
		}
	}
	if w.sw != nil {
		w.closeTrails(top, key, at, order)
	}
	s := w.sample[w.cur]
	if top > 0 && top >= s {
		w.leader = int(key)
	}
	w.closed = append(w.closed, max(s, top))
}

func (o *openTimeline) finish(c *Collector) *Timeline {
	horizon := max(o.horizon, o.latest+1)
	bin := TimelineBin(time.Duration(horizon))
	// The horizon's width is still there unless the horizon is shorter than a window
	// past the last decision, which a run closing with its own horizon never gives;
	// then the finest width left stands in.
	w := o.widths[0]
	for _, x := range o.widths {
		if x.width == int64(bin) {
			w = x
		}
	}
	bin = time.Duration(w.width)
	n := max(int((horizon+int64(bin)-1)/int64(bin)), w.cur+1, 1)
	o.advance(c, w, n-1)
	o.close(w)
	tl := &Timeline{Bin: bin, Admitted: make([]int64, n), Refused: make([]int64, n), WindowAdmitted: w.closed[:n], Admissions: o.exact.kept(), Shard: w.sw}
	per := int64(bin) / o.base
	for i, b := range o.bins {
		k := min(int(int64(i)/per), n-1)
		tl.Admitted[k] += b.admitted
		tl.Refused[k] += b.refused
	}
	return tl
}

// mergeWindowColumn finds again the busiest-window column of one run over all the parts'
// keys from the parts' ShardWindows, bin by bin as a timelineRecorder records it: the
// larger of the leader's count at the bin's start (from its shard's trail) and the
// largest count at an admission in the bin (the largest of the parts' tops), the lead
// passing to the key of the last admission that reached it, when that is at least the
// leader's count. The last is the latest by time, then by order at the instant.
func mergeWindowColumn(parts []CollectorPartial) ([]int64, error) {
	n := len(parts[0].Timeline.WindowAdmitted)
	for _, p := range parts {
		sw := p.Timeline.Shard
		if sw == nil || len(sw.Top) != n || len(sw.TopAt) != n || len(sw.TopOrder) != n || len(sw.Trail) != n {
			return nil, errors.New("the parts' timelines carry no record of their busiest keys (rlsim replay --shard writes one)")
		}
	}
	out := make([]int64, n)
	leader, since := -1, 0 // the part of the leading key, and the bin it took the lead in
	for j := range n {
		var s int64
		if leader >= 0 {
			if tr, d := parts[leader].Timeline.Shard.Trail[since], j-since-1; d < len(tr) {
				s = tr[d]
			}
		}
		top, best := int64(0), -1
		for i, p := range parts {
			sw := p.Timeline.Shard
			t := sw.Top[j]
			if t == 0 || t < top {
				continue
			}
			if t > top || sw.TopAt[j] > parts[best].Timeline.Shard.TopAt[j] ||
				sw.TopAt[j] == parts[best].Timeline.Shard.TopAt[j] && sw.TopOrder[j] > parts[best].Timeline.Shard.TopOrder[j] {
				top, best = t, i
			}
		}
		out[j] = max(s, top)
		if top > 0 && top >= s {
			leader, since = best, j
		}
	}
	return out, nil
}
