package render

import (
	"cmp"
	"slices"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

// busiestSteps is, from a run's admissions, the busiest key's count in the trailing
// window (the largest any key holds) as exact steps: a point at every instant the count
// changes — an admission, or an admission leaving the window W later — with X in seconds.
// It also returns when the count first reached its peak and the earliest admission that
// peak window holds.
func busiestSteps(admissions []report.Admission, window int64) (steps []chart.Point, peakAt, peakFrom int64) {
	type change struct {
		t    int64
		key  uint32
		cost int64
	}
	// Each admission's cost is its count less what the key's window held before it.
	var changes []change
	held := map[uint32][]change{}
	sums := map[uint32]int64{}
	for _, a := range admissions {
		h := held[a.Key]
		for len(h) > 0 && h[0].t <= a.T-window {
			sums[a.Key] -= h[0].cost
			h = h[1:]
		}
		c := change{t: a.T, key: a.Key, cost: a.Count - sums[a.Key]}
		held[a.Key] = append(h, c)
		sums[a.Key] = a.Count
		changes = append(changes, c, change{t: a.T + window, key: a.Key, cost: -c.cost})
	}
	slices.SortStableFunc(changes, func(a, b change) int { return cmp.Compare(a.t, b.t) })
	// keysAt counts the keys holding each count, so the busiest count follows every
	// change without a pass over all keys.
	clear(sums)
	keysAt := map[int64]int{}
	var busiest, peak int64
	var peakKey uint32
	for i := 0; i < len(changes); {
		t := changes[i].t
		for ; i < len(changes) && changes[i].t == t; i++ {
			c := changes[i]
			before := sums[c.key]
			after := before + c.cost
			if before > 0 {
				keysAt[before]--
			}
			if after > 0 {
				keysAt[after]++
			}
			sums[c.key] = after
			busiest = max(busiest, after)
			for busiest > 0 && keysAt[busiest] == 0 {
				busiest--
			}
			if after > peak {
				peak, peakAt, peakKey = after, t, c.key
			}
		}
		steps = append(steps, chart.Point{X: time.Duration(t).Seconds(), Y: float64(busiest)})
	}
	peakFrom = peakAt
	for _, a := range admissions {
		if a.Key == peakKey && a.T > peakAt-window && a.T <= peakAt {
			peakFrom = min(peakFrom, a.T)
		}
	}
	return steps, peakAt, peakFrom
}

// boundaryEvent finds, in r, the moment the algorithm that broke the promise the most
// reached its peak, when that rise took less than maxZoomShare of the run's axis and the
// run kept its admissions; ok is false otherwise.
func boundaryEvent(r *report.Report) (e zoomEvent, ok bool) {
	var worst *report.Result
	for i, x := range r.Results {
		if x.Timeline == nil || x.Timeline.Admissions == nil || !report.Broke(x.OverAdmission) {
			continue
		}
		if worst == nil || x.OverAdmission > worst.OverAdmission {
			worst = &r.Results[i]
		}
	}
	if worst == nil {
		return zoomEvent{}, false
	}
	tl := worst.Timeline
	axis := int64(tl.Bin) * int64(len(tl.Admitted))
	_, peakAt, peakFrom := busiestSteps(tl.Admissions, int64(r.Policy.Window))
	span := peakAt - peakFrom
	if axis <= 0 || float64(span) > maxZoomShare*float64(axis) {
		return zoomEvent{}, false
	}
	// Room on each side: the rise's own length, at least 0.1% of the axis.
	pad := max(span, axis/1000)
	return zoomEvent{From: max(peakFrom-pad, 0), To: min(peakAt+pad, axis)}, true
}

// zoomSeries are each result's busiest-key steps cut to the event, with a point at its
// start holding the count there.
func zoomSeries(r *report.Report, e zoomEvent) []chart.Series {
	from, to := time.Duration(e.From).Seconds(), time.Duration(e.To).Seconds()
	var out []chart.Series
	for _, x := range r.Results {
		if x.Timeline == nil || x.Timeline.Admissions == nil {
			continue
		}
		steps, _, _ := busiestSteps(x.Timeline.Admissions, int64(r.Policy.Window))
		pts := []chart.Point{{X: from}}
		for _, q := range steps {
			switch {
			case q.X <= from:
				pts[0].Y = q.Y
			case q.X <= to:
				pts = append(pts, q)
			}
		}
		pts = append(pts, chart.Point{X: to, Y: pts[len(pts)-1].Y})
		out = append(out, chart.Series{Name: report.ResultName(x), Points: pts})
	}
	return out
}

// zoomEvent is a boundary event worth a closer look: the worst algorithm's busiest key
// rose past the limit to its peak within [from, to] (ns), a sliver of the run's axis.
type zoomEvent struct {
	From, To int64
}

// maxZoomShare is how much of a run's axis an event may take and still get a zoom: above
// it, the whole run's chart shows the event well enough.
const maxZoomShare = 0.05
