package report

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// CollectorPartial is what a collector counted, raw, so that the collectors of runs that
// each measured their own keys of one traffic (the shards of a replayed log) add up to
// the collector of one run over it all (MergeCollectors). Every count is a sum over keys
// and every peak a maximum over keys, so they add and compare across shards; what
// depends on all keys at once — backend_peak, the trailing 1 s of admitted cost the
// backend saw — is carried as the backend's arrivals, instant by instant, which add.
type CollectorPartial struct {
	Limit         int64 `json:"limit"`
	Window        int64 `json:"window_ns"`
	BackendWindow int64 `json:"backend_window_ns"`

	Requests, Admitted, Rejected int64
	Peak                         int64
	FalseAllow, FalseReject      int64
	Legit, LegitRejected         int64
	Attacker, AttackerAdmitted   int64
	DelaySum                     float64 // ns; a float, as the collector keeps it, so no sum wraps
	DelayMax                     int64

	// Arrivals are the admitted cost reaching the backend, per instant, in time order:
	// varints of the time since the instant before (the first since 0) and of the cost.
	Arrivals []byte `json:"arrivals"`
	// Timeline is the collector's timeline, when it recorded one; AdmissionsOverflow says
	// it had more admissions than it keeps one by one.
	Timeline           *Timeline `json:"timeline,omitempty"`
	AdmissionsOverflow bool      `json:"admissions_overflow,omitempty"`
}

// RecordArrivals makes the collector keep the backend's arrivals instant by instant, for
// Partial. A shard's collectors do; it costs a few bytes per instant at which something
// reached the backend.
func (c *Collector) RecordArrivals() { c.arrivals = &arrivalLog{} }

// arrivalLog is the backend's arrivals, aggregated per instant and varint-encoded.
type arrivalLog struct {
	buf       []byte
	last, sum int64 // the instant being summed and its cost so far
	open      bool
}

func (a *arrivalLog) add(t, cost int64) {
	if a.open && t == a.last {
		a.sum += cost
		return
	}
	a.flush()
	a.buf = binary.AppendUvarint(a.buf, uint64(t-a.prev()))
	a.last, a.sum, a.open = t, cost, true
}

// prev is the instant written last: the deltas are from it.
func (a *arrivalLog) prev() int64 { return a.last }

func (a *arrivalLog) flush() {
	if a.open {
		a.buf = binary.AppendUvarint(a.buf, uint64(a.sum))
		a.open = false
	}
}

// Partial finishes the measurement and returns what the collector counted, raw: the
// counts of Result, before any ratio is taken, and the backend's arrivals when
// RecordArrivals was called.
func (c *Collector) Partial() CollectorPartial {
	c.flushBackend(1<<63 - 1)
	p := c.counts()
	if c.arrivals != nil {
		c.arrivals.flush()
		p.Arrivals = c.arrivals.buf
	}
	if c.timeline != nil {
		p.Timeline = c.timeline.finish(c)
		if p.Timeline.Admissions == nil && c.admitted > 0 {
			p.AdmissionsOverflow = true
		}
	}
	return p
}

// counts are the collector's raw counts.
func (c *Collector) counts() CollectorPartial {
	return CollectorPartial{
		Limit: c.limit, Window: c.window, BackendWindow: c.backendWindow,
		Requests: c.requests, Admitted: c.admitted, Rejected: c.rejected, Peak: c.peak,
		FalseAllow: c.falseAllow, FalseReject: c.falseReject, Legit: c.legit, LegitRejected: c.legitRejected,
		Attacker: c.attacker, AttackerAdmitted: c.attackerAdmitted, DelaySum: c.delaySum, DelayMax: c.delayMax,
	}
}

// result turns the counts into a result for a limiter named name holding keys keys in
// stateBytes bytes (negative: not known here), with backend_peak backendPeak — what
// Collector.Result gives, for one collector or for the merge of several.
func (p CollectorPartial) result(name string, keys int, stateBytes int64, backendPeak int64) Result {
	r := Result{
		Algorithm:          name,
		Requests:           p.Requests,
		Admitted:           p.Admitted,
		Rejected:           p.Rejected,
		PeakWindowAdmitted: p.Peak,
		OverAdmission:      float64(p.Peak) / float64(p.Limit),
		FalseAllow:         p.FalseAllow,
		FalseReject:        p.FalseReject,
		FalseAllowRate:     ratio(p.FalseAllow, p.Requests),
		FalseRejectRate:    ratio(p.FalseReject, p.Requests),
		BackendPeak:        backendPeak,
		Keys:               keys,
		DelayMaxMS:         float64(p.DelayMax) / float64(time.Millisecond),
	}
	if p.Legit > 0 {
		v := ratio(p.LegitRejected, p.Legit)
		r.LegitRejectRate = &v
	}
	if p.Attacker > 0 {
		v := ratio(p.AttackerAdmitted, p.Attacker)
		r.AttackerAdmitRate = &v
	}
	if p.Admitted > 0 {
		r.DelayMeanMS = p.DelaySum / float64(p.Admitted) / float64(time.Millisecond)
	}
	if stateBytes < 0 {
		r.StateBytesUnknown = true
	} else if keys > 0 {
		r.StateBytesPerKey = float64(stateBytes) / float64(keys)
	}
	return r
}

// LimiterTotals are what the limiters a result stands for hold: keys and bytes of state
// (negative when one of them is not in the process to count).
type LimiterTotals struct {
	Keys       int   `json:"keys"`
	StateBytes int64 `json:"state_bytes"`
}

// Add adds the totals of limiters that held other keys.
func (t LimiterTotals) Add(u LimiterTotals) LimiterTotals {
	out := LimiterTotals{Keys: t.Keys + u.Keys, StateBytes: t.StateBytes + u.StateBytes}
	if t.StateBytes < 0 || u.StateBytes < 0 {
		out.StateBytes = -1
	}
	return out
}

// TotalsOf are lim's totals.
func TotalsOf(lim algorithms.Limiter) LimiterTotals {
	return LimiterTotals{Keys: lim.Keys(), StateBytes: lim.StateBytes()}
}

// MergeCollectors adds up the partials of collectors that measured disjoint keys of one
// traffic against one promise into the result one collector over all of it gives, for a
// limiter named name with totals lim. The timeline's bins add; its busiest-key column is
// found again from the parts' records of their busiest keys (mergeWindowColumn), and its
// admissions, kept one by one, are merged by time, each part's keys
// kept apart.
func MergeCollectors(name string, lim LimiterTotals, parts []CollectorPartial) (Result, error) {
	if len(parts) == 0 {
		return Result{}, errors.New("no parts to merge")
	}
	sum := parts[0]
	sum.Arrivals, sum.Timeline = nil, nil
	streams := [][]byte{parts[0].Arrivals}
	for _, p := range parts[1:] {
		if p.Limit != sum.Limit || p.Window != sum.Window || p.BackendWindow != sum.BackendWindow {
			return Result{}, fmt.Errorf("%s: the parts measured different promises (%d per %s and %d per %s)", name, sum.Limit, time.Duration(sum.Window), p.Limit, time.Duration(p.Window))
		}
		sum.Requests += p.Requests
		sum.Admitted += p.Admitted
		sum.Rejected += p.Rejected
		sum.Peak = max(sum.Peak, p.Peak)
		sum.FalseAllow += p.FalseAllow
		sum.FalseReject += p.FalseReject
		sum.Legit += p.Legit
		sum.LegitRejected += p.LegitRejected
		sum.Attacker += p.Attacker
		sum.AttackerAdmitted += p.AttackerAdmitted
		sum.DelaySum += p.DelaySum
		sum.DelayMax = max(sum.DelayMax, p.DelayMax)
		streams = append(streams, p.Arrivals)
	}
	peak, err := backendPeakOf(streams, sum.BackendWindow)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	r := sum.result(name, lim.Keys, lim.StateBytes, peak)
	if parts[0].Timeline != nil {
		tl, err := mergeTimelines(parts)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
		r.Timeline = tl
	}
	return r, nil
}

// arrivalReader reads an arrival stream.
type arrivalReader struct {
	buf     []byte
	t, cost int64
}

func (a *arrivalReader) next() (bool, error) {
	if len(a.buf) == 0 {
		return false, nil
	}
	dt, n := binary.Uvarint(a.buf)
	if n <= 0 || dt > math.MaxInt64 {
		return false, errors.New("the backend's arrivals are corrupt")
	}
	a.buf = a.buf[n:]
	c, m := binary.Uvarint(a.buf)
	if m <= 0 || c > math.MaxInt64 {
		return false, errors.New("the backend's arrivals are corrupt")
	}
	a.buf = a.buf[m:]
	a.t += int64(dt)
	a.cost = int64(c)
	return true, nil
}

// backendPeakOf finds backend_peak over the arrival streams of all parts, instant by
// instant in time order, as a collector's backend log does over its own arrivals.
func backendPeakOf(streams [][]byte, window int64) (int64, error) {
	readers := make([]*arrivalReader, 0, len(streams))
	for _, s := range streams {
		r := &arrivalReader{buf: s}
		ok, err := r.next()
		if err != nil {
			return 0, err
		}
		if ok {
			readers = append(readers, r)
		}
	}
	var backend algorithms.Log
	var peak int64
	for len(readers) > 0 {
		t := readers[0].t
		for _, r := range readers[1:] {
			t = min(t, r.t)
		}
		var cost int64
		for i := 0; i < len(readers); {
			r := readers[i]
			if r.t != t {
				i++
				continue
			}
			cost += r.cost
			ok, err := r.next()
			if err != nil {
				return 0, err
			}
			if !ok {
				readers = slices.Delete(readers, i, i+1)
				continue
			}
			i++
		}
		backend.Expire(t - window)
		backend.Push(t, cost)
		peak = max(peak, backend.Sum())
	}
	return peak, nil
}

// mergeTimelines adds the parts' timelines bin by bin, and finds their busiest-window
// column again from their ShardWindows.
func mergeTimelines(parts []CollectorPartial) (*Timeline, error) {
	first := parts[0].Timeline
	out := &Timeline{Bin: first.Bin, Admitted: make([]int64, len(first.Admitted)), Refused: make([]int64, len(first.Refused)),
		WindowAdmitted: make([]int64, len(first.WindowAdmitted))}
	overflow := false
	var admissions []Admission
	var keyBase uint32
	for _, p := range parts {
		tl := p.Timeline
		if tl == nil || tl.Bin != first.Bin || len(tl.Admitted) != len(first.Admitted) {
			return nil, errors.New("the parts' timelines have different bins")
		}
		var most uint32
		for i := range tl.Admitted {
			out.Admitted[i] += tl.Admitted[i]
			out.Refused[i] += tl.Refused[i]
		}
		overflow = overflow || p.AdmissionsOverflow
		for _, a := range tl.Admissions {
			most = max(most, a.Key+1)
			a.Key += keyBase
			admissions = append(admissions, a)
		}
		keyBase += most
	}
	var err error
	if out.WindowAdmitted, err = mergeWindowColumn(parts); err != nil {
		return nil, err
	}
	if !overflow && len(admissions) <= MaxExactAdmissions {
		slices.SortStableFunc(admissions, func(a, b Admission) int { return cmp.Compare(a.T, b.T) })
		out.Admissions = admissions
	}
	return out, nil
}

// HarmPartial is what a Harm counted, per actor, so that the harm of disjoint keys'
// runs adds up (MergeHarm).
type HarmPartial struct {
	PageLoads map[uint64]bool       `json:"page_loads,omitempty"`
	Legit     map[string]LegitActor `json:"legit,omitempty"`
	Attackers map[string]ActorCount `json:"attackers,omitempty"`
}

// LegitActor is one legit actor's part: whether it was refused, and the most it had
// admitted in LongRunWindows windows.
type LegitActor struct {
	Blocked  bool  `json:"blocked,omitempty"`
	LongPeak int64 `json:"long_peak"`
}

// Partial is what h counted.
func (h *Harm) Partial() HarmPartial {
	p := HarmPartial{PageLoads: h.pageLoads, Legit: map[string]LegitActor{}, Attackers: map[string]ActorCount{}}
	for name, s := range h.legit {
		p.Legit[name] = LegitActor{Blocked: s.blocked, LongPeak: s.peak}
	}
	for name, a := range h.attackers {
		p.Attackers[name] = *a
	}
	return p
}

// MergeHarm adds up the parts of runs over disjoint keys into h, which must be new. An
// actor whose requests fell in two parts (keys that do not follow the actor) leaves its
// long-run peak unknown: that is an error, naming the actor.
func MergeHarm(h *Harm, parts []HarmPartial) error {
	for _, p := range parts {
		for id, broken := range p.PageLoads {
			if _, seen := h.pageLoads[id]; seen {
				return fmt.Errorf("page load %d is in two shards: page loads cannot be merged across keys", id)
			}
			h.pageLoads[id] = broken
		}
		for name, a := range p.Legit {
			if _, seen := h.legit[name]; seen {
				return fmt.Errorf("actor %q sent requests under keys of two shards: its long-run peak cannot be merged (shard by a key that follows the actor)", name)
			}
			h.legit[name] = &actorState{blocked: a.Blocked, peak: a.LongPeak}
			h.longPeak = max(h.longPeak, a.LongPeak)
		}
		for name, a := range p.Attackers {
			if b := h.attackers[name]; b != nil {
				b.Requests += a.Requests
				b.Admitted += a.Admitted
				continue
			}
			c := a
			h.attackers[name] = &c
		}
	}
	return nil
}
