// Package report measures a run against the exact reference and renders what it found.
// Measuring (Collector) is kept apart from rendering (Table, JSON, CSV, Markdown): a
// collector never opens a file, and renderers write to an io.Writer.
package report

import (
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// Result is one algorithm's outcome on one scenario. The JSON names are the contract of
// DESIGN.md; keep them.
type Result struct {
	Algorithm          string  `json:"algorithm"`
	Requests           int64   `json:"requests"`
	Admitted           int64   `json:"admitted"`
	Rejected           int64   `json:"rejected"`
	PeakWindowAdmitted int64   `json:"peak_window_admitted"`
	OverAdmission      float64 `json:"over_admission"`
	FalseAllow         int64   `json:"false_allow"`
	FalseReject        int64   `json:"false_reject"`
	FalseAllowRate     float64 `json:"false_allow_rate"`
	FalseRejectRate    float64 `json:"false_reject_rate"`
	// LegitRejectRate and AttackerAdmitRate are null when the run had no request of
	// that class.
	LegitRejectRate   *float64 `json:"legit_reject_rate"`
	AttackerAdmitRate *float64 `json:"attacker_admit_rate"`
	BackendPeak       int64    `json:"backend_peak"`
	StateBytesPerKey  float64  `json:"state_bytes_per_key"`
	// StateBytesUnknown says the limiter's state is not in this process to count (a
	// user's script or program): StateBytesPerKey is then 0 and means nothing.
	StateBytesUnknown bool `json:"state_bytes_unknown,omitempty"`
	Keys              int  `json:"keys"`
	// DelayMeanMS and DelayMaxMS are the queueing delay the limiter added to admitted
	// requests (only the leaky bucket queues).
	DelayMeanMS float64 `json:"delay_ms_mean"`
	DelayMaxMS  float64 `json:"delay_ms_max"`
	// WouldRefuse counts the requests a limiter in shadow mode admitted though its rule
	// would have refused them (algorithms.Shadowed: envoy-ratelimit's shadow_mode); absent
	// for every other limiter.
	WouldRefuse int64 `json:"would_refuse,omitempty"`

	// Identity-aware runs (layered limits, generated actors) add the fields below; runs
	// that produce none of them leave them out of the JSON. See layers.go and harm.go.
	Unkeyed           int64        `json:"unkeyed,omitempty"`
	UnkeyedReason     string       `json:"unkeyed_reason,omitempty"`
	RefusalsByLayer   []LayerCount `json:"refusals_by_layer,omitempty"`
	PageLoads         int64        `json:"page_loads,omitempty"`
	BrokenPageLoads   *float64     `json:"broken_page_loads,omitempty"`
	LegitUsers        int64        `json:"legit_users,omitempty"`
	LegitUsersBlocked *int64       `json:"legit_users_blocked,omitempty"`
	LongRunPeak       *float64     `json:"long_run_peak,omitempty"`
	Attackers         []ActorCount `json:"attackers,omitempty"`
	// WorstOverAdmission is the most over_admission any traffic of one key can reach
	// against this algorithm and policy, as found by the worst-case search (rlsim
	// worst-case): what over_admission promises, beside what this traffic achieved. It
	// is null when the policy is too large for compare to search (rlsim worst-case
	// takes those on).
	WorstOverAdmission *float64 `json:"worst_over_admission"`
	// Timeline is the run binned over time, for charts; nil unless the collector recorded it.
	Timeline *Timeline `json:"-"`
	// Distributed holds the fleet figures of a run with a cluster section; nil otherwise.
	*Distributed
}

// Collector measures one algorithm's decisions as they happen, streaming: it keeps, per
// key, only what the algorithm admitted in the trailing window (bounded by what the
// algorithm can admit in one window), so its memory grows with keys, not with requests.
// Collectors of algorithms that see the same requests in the same order can share those
// windows (see Group).
type Collector struct {
	limit         int64
	window        int64
	backendWindow int64

	windows *keyWindows // per key: admitted (t, cost) in the trailing window, maybe shared
	member  int         // this collector's place among the windows' members

	requests, admitted, rejected int64
	peak                         int64
	falseAllow, falseReject      int64
	legit, legitRejected         int64
	attacker, attackerAdmitted   int64
	delayMax                     int64
	// delaySum is in float64: the leaky bucket delays a request by up to Burst·W/Limit,
	// which an int64 of nanoseconds sums only 25 times at a window of 100000h.
	delaySum float64

	backend     algorithms.Log // admitted cost reaching the backend in the trailing bin
	backendPeak int64
	// pending holds the cost of admitted requests still queued before the backend, by
	// release time. Releases due at the same time leave in no particular order, which
	// changes nothing: the backend's window counts them all at that time.
	pending sim.Queue[int64]

	timeline timelineObserver // nil unless RecordTimeline or RecordOpenTimeline was called
	arrivals *arrivalLog      // nil unless RecordArrivals was called
}

// NewCollector measures against the promise "limit units in any window", with backend_peak
// taken over backendWindow.
func NewCollector(limit int64, window, backendWindow time.Duration) *Collector {
	return &Collector{limit: limit, window: int64(window), backendWindow: int64(backendWindow), windows: newKeyWindows(1)}
}

// Observe records one decision for key at t (ns since the start) and returns the
// reference's verdict: whether the promise allowed this request given what this algorithm
// had already admitted in the trailing window. A collector that is a member of a Group is
// told its decisions through the group instead.
func (c *Collector) Observe(key uint32, t int64, cost int64, class traffic.Class, d algorithms.Decision) (referenceAllowed bool) {
	if c.windows.members != 1 {
		panic("report: Observe on a collector of a group; observe through the group")
	}
	c.TimelineAt(t)
	slot := c.windows.slot(key)
	c.windows.expire(slot, t-c.window)
	before := c.windows.sum(slot, 0)
	if d.Allowed {
		c.windows.push(slot, t, cost, 1)
	}
	return c.record(key, t, cost, class, d.Allowed, int64(d.Delay), before)
}

// record counts one decision of this collector's algorithm, whose trailing window held
// before (without the request) when it was decided; the window holds the request already
// if it was admitted. It returns the reference's verdict.
func (c *Collector) record(key uint32, t, cost int64, class traffic.Class, allowed bool, delay int64, before int64) (referenceAllowed bool) {
	// Written so that no sum can wrap, whatever an algorithm admitted before.
	referenceAllowed = cost <= c.limit-before
	held := before
	c.requests++
	c.flushBackend(t)
	if allowed {
		held += cost
		c.admitted++
		c.peak = max(c.peak, held)
		if !referenceAllowed {
			c.falseAllow++
		}
		c.delaySum += float64(delay)
		c.delayMax = max(c.delayMax, delay)
		if delay == 0 {
			c.reachBackend(t, cost)
		} else {
			c.pending.Push(sim.Item[int64]{At: time.Duration(t + delay), Value: cost})
		}
	} else {
		c.rejected++
		if referenceAllowed {
			c.falseReject++
		}
	}
	switch class {
	case traffic.Legit:
		c.legit++
		if !allowed {
			c.legitRejected++
		}
	case traffic.Attacker:
		c.attacker++
		if allowed {
			c.attackerAdmitted++
		}
	}
	if c.timeline != nil {
		c.timeline.observe(c, key, t, allowed, held)
	}
	return referenceAllowed
}

func (c *Collector) reachBackend(t, cost int64) {
	c.backend.Expire(t - c.backendWindow)
	c.backend.Push(t, cost)
	c.backendPeak = max(c.backendPeak, c.backend.Sum())
	if c.arrivals != nil {
		c.arrivals.add(t, cost)
	}
}

// flushBackend moves queued requests released by now to the backend, in release order.
func (c *Collector) flushBackend(now int64) {
	for c.pending.Len() > 0 && int64(c.pending.Min().At) <= now {
		r := c.pending.Pop()
		c.reachBackend(int64(r.At), r.Value)
	}
}

// TrackerBytes is the memory the collector's per-key windows hold; collectors of a Group
// share theirs, and each reports all of it.
func (c *Collector) TrackerBytes() int64 {
	return c.windows.bytes()
}

// Result finishes the measurement for the limiter lim.
func (c *Collector) Result(lim algorithms.Limiter) Result {
	c.flushBackend(1<<63 - 1)
	r := c.counts().result(lim.Name(), lim.Keys(), lim.StateBytes(), c.backendPeak)
	if c.timeline != nil {
		r.Timeline = c.timeline.finish(c)
	}
	if s, ok := lim.(algorithms.Shadowed); ok {
		r.WouldRefuse = s.WouldRefuse()
	}
	return r
}

// Ratio is a over b, 0 when b is: how every rate of a result is taken.
func Ratio(a, b int64) float64 { return ratio(a, b) }

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
