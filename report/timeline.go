package report

import (
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

// observe is called by Observe after the decision; sum is key's trailing-window count at
// t, holding the request if it was admitted.
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
