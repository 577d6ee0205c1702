package report

import (
	"math"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

// LayerCount is what one layer of a layered limit did in a run. Layers are checked
// narrowest first and a request stops at the first layer that refuses it, so a layer only
// sees what the layers before it admitted.
type LayerCount struct {
	// Layer is the limit's name and Key what it is keyed on.
	Layer string `json:"layer"`
	Key   string `json:"key"`
	// Checked is the number of requests that reached the layer, Refused how many it
	// refused, AttackerPassed how many attacker requests it let through to the next layer
	// (or to the backend, for the last).
	Checked        int64 `json:"checked"`
	Refused        int64 `json:"refused"`
	AttackerPassed int64 `json:"attacker_passed"`
}

// LayerCell is one limiter of a layer (a layer with per-plan quotas has one per plan)
// and the collector that judges it against its own promise.
type LayerCell struct {
	Collector *Collector
	Limiter   algorithms.Limiter
}

// Layered measures a run with several limits. Outcome counts what happened to each
// request overall (admitted only if every layer admitted it); each cell's collector judges
// the requests that reached it against that cell's promise.
//
// With layers, the reference figures are per layer and then combined: a false allow or a
// false reject is counted at the layer that made the decision, judged against that layer's
// own "L per W" on that layer's key and history; false_allow and false_reject are the sums
// over layers, their rates divide by all requests; peak_window_admitted and
// over_admission are those of the layer that overshot its promise the most.
type Layered struct {
	Outcome *Collector
	Layers  []LayerCount
	Cells   [][]LayerCell // per layer
}

// NewOutcomeCollector returns a collector whose promise never binds: it counts requests,
// classes, backend load and delay, and leaves judging to the layers.
func NewOutcomeCollector(backendWindow time.Duration) *Collector {
	return NewCollector(math.MaxInt64/4, 1, backendWindow)
}

// ObserveUnkeyed records a request refused because it could not be keyed (a garbage
// address, a missing identity). The promise says nothing about a request without a key,
// so it is neither a false allow nor a false reject.
func (c *Collector) ObserveUnkeyed(class traffic.Class) {
	c.requests++
	c.rejected++
	switch class {
	case traffic.Legit:
		c.legit++
		c.legitRejected++
	case traffic.Attacker:
		c.attacker++
	}
}

// Result combines the layers into one result row for algorithm.
func (l *Layered) Result(algorithm string) Result {
	sum := summedLimiter{name: algorithm}
	for _, cells := range l.Cells {
		for _, c := range cells {
			sum.keys += c.Limiter.Keys()
			if b := c.Limiter.StateBytes(); b < 0 || sum.bytes < 0 {
				sum.bytes = -1 // one layer not counted: the sum is not known either
			} else {
				sum.bytes += b
			}
		}
	}
	r := l.Outcome.Result(sum)
	r.PeakWindowAdmitted, r.OverAdmission = 0, 0
	r.FalseAllow, r.FalseReject = 0, 0
	for _, cells := range l.Cells {
		for _, c := range cells {
			cr := c.Collector.Result(c.Limiter)
			if cr.OverAdmission > r.OverAdmission {
				r.PeakWindowAdmitted, r.OverAdmission = cr.PeakWindowAdmitted, cr.OverAdmission
			}
			r.FalseAllow += cr.FalseAllow
			r.FalseReject += cr.FalseReject
		}
	}
	r.FalseAllowRate = ratio(r.FalseAllow, r.Requests)
	r.FalseRejectRate = ratio(r.FalseReject, r.Requests)
	r.RefusalsByLayer = append([]LayerCount(nil), l.Layers...)
	return r
}

// summedLimiter stands for all the limiters of a layered run when the outcome collector
// asks for a name, a key count and state bytes.
type summedLimiter struct {
	name  string
	keys  int
	bytes int64
}

func (s summedLimiter) Name() string                                   { return s.name }
func (s summedLimiter) Allow(uint32, int64, int64) algorithms.Decision { return algorithms.Decision{} }
func (s summedLimiter) Keys() int                                      { return s.keys }
func (s summedLimiter) StateBytes() int64                              { return s.bytes }
