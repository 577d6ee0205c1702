package traffic

import (
	"fmt"
	"math"
	"time"
)

// AdaptiveConfig is the client-side rate limiter of the AWS SDKs' "adaptive" retry mode
// (botocore's retries/adaptive.py, the Java SDK's RateLimitingTokenBucket), in our words:
//
//   - Every attempt of a client process, first tries included, takes a token from the
//     process's bucket once the bucket is on; without one it waits until the bucket's
//     fill rate has made one. The bucket is off until the first throttling answer.
//   - The process measures the rate at which answers come back: per half-second, smoothed
//     (0.8 of the newest half-second, 0.2 of the past).
//   - A throttling answer (Throttled: a 429, or a 503 naming a time to come back) marks
//     the rate the process was sending at (the measured rate, or the fill rate if lower)
//     as the new ceiling W and cuts the fill rate to Beta·W: a multiplicative decrease.
//   - Any other answer grows the fill rate along a cubic, as TCP CUBIC grows a window:
//     Scale·(t − K)³ + W, t seconds since the last throttle, K = ∛(W·(1−Beta)/Scale) — so
//     the rate climbs fast right after the cut, flattens around the old ceiling W, then
//     probes beyond it — and never above twice the measured rate.
//   - The fill rate never drops below MinRate; the bucket holds at most max(rate, 1)
//     tokens.
//
// It is the only policy that also paces first tries: the client's own offered load, not
// just its retries. The AWS SDKs combine it with the retry quota; here that is
// "+retry-quota+adaptive". Attempts that must wait queue for the tokens the fill rate
// makes, and look again at least every half second, so a rate that rises shortens the
// queue, as botocore wakes its waiting threads when the rate changes.
type AdaptiveConfig struct {
	// Beta is the multiplicative decrease (AWS: 0.7).
	Beta float64
	// Scale is the cubic's scale constant (AWS: 0.4).
	Scale float64
	// MinRate is the lowest fill rate, in attempts per second (AWS: 0.5).
	MinRate float64
}

// DefaultAdaptive is the AWS SDKs' constants.
var DefaultAdaptive = AdaptiveConfig{Beta: 0.7, Scale: 0.4, MinRate: 0.5}

// Name returns "adaptive".
func (AdaptiveConfig) Name() string { return "adaptive" }

// New returns a process whose bucket is off.
func (c AdaptiveConfig) New() Policy { return &Adaptive{cfg: c} }

func (c AdaptiveConfig) validate() error {
	switch {
	case !(c.Beta > 0 && c.Beta < 1):
		return fmt.Errorf("adaptive-beta: must be between 0 and 1 (exclusive), got %g", c.Beta)
	case !(c.Scale > 0 && c.Scale <= 1e6):
		return fmt.Errorf("adaptive-scale: must be positive, got %g", c.Scale)
	case !(c.MinRate > 0 && c.MinRate <= 1e9):
		return fmt.Errorf("adaptive-min-rate: must be positive, got %g", c.MinRate)
	}
	return nil
}

const (
	adaptiveSmoothing = 0.8
	adaptiveBucket    = 0.5 // seconds per measured-rate bucket
	adaptiveRateScale = 2.0 // the rate never exceeds this many times the measured rate
)

// Adaptive is one client process's adaptive rate limiter (AdaptiveConfig). Times are
// seconds of virtual time, from the process's first attempt.
type Adaptive struct {
	cfg     AdaptiveConfig
	started bool
	enabled bool
	// The token bucket.
	fillRate, maxCapacity, capacity float64
	lastRefill                      float64
	// The measured rate of answers.
	measured, lastBucket, count float64
	// The cubic: the ceiling W, its zero point K, and the last throttle.
	wMax, k, lastThrottle float64
	// waiting counts attempts told to wait and not yet back.
	waiting int
}

var (
	_ Policy = (*Adaptive)(nil)
	_ Pacer  = (*Adaptive)(nil)
)

// Enabled reports whether the bucket is on (a throttling answer has been seen).
func (a *Adaptive) Enabled() bool { return a.enabled }

// FillRate is the bucket's fill rate, attempts per second.
func (a *Adaptive) FillRate() float64 { return a.fillRate }

// MeasuredRate is the smoothed rate of answers, per second.
func (a *Adaptive) MeasuredRate() float64 { return a.measured }

func (a *Adaptive) start(t float64) {
	if a.started {
		return
	}
	a.started = true
	a.fillRate, a.maxCapacity, a.capacity, a.lastRefill = max(1, a.cfg.MinRate), 1, 0, t
	a.lastBucket = math.Floor(t)
	a.lastThrottle = t
}

func (a *Adaptive) refill(t float64) {
	if t > a.lastRefill {
		a.capacity = min(a.maxCapacity, a.capacity+float64((t-a.lastRefill)*a.fillRate))
		a.lastRefill = t
	}
}

// Send takes a token for the attempt, or asks it to wait its turn.
func (a *Adaptive) Send(now time.Duration, _ bool) (time.Duration, bool) {
	t := now.Seconds()
	a.start(t)
	if !a.enabled {
		return 0, true
	}
	return a.acquire(t), true
}

// Resume implements Pacer: a waiting attempt takes a token or waits again.
func (a *Adaptive) Resume(now time.Duration) time.Duration {
	a.waiting--
	return a.acquire(now.Seconds())
}

// Cancel implements Pacer.
func (a *Adaptive) Cancel() { a.waiting-- }

// maxPacing bounds one wait, so that waiting attempts see a rate that rose meanwhile
// within half a second (botocore's waiting threads are woken when the rate changes).
const maxPacing = 500 * time.Millisecond

// acquire takes a token at t, or returns the wait until the attempt's turn: the waiting
// attempts queue for the tokens the fill rate makes, and each checks again after at
// most maxPacing.
func (a *Adaptive) acquire(t float64) time.Duration {
	a.refill(t)
	if a.capacity >= 1 {
		a.capacity--
		return 0
	}
	a.waiting++
	wait := (float64(a.waiting) - a.capacity) / a.fillRate
	return min(time.Duration(math.Ceil(float64(wait*float64(time.Second)))), maxPacing)
}

// Retry never holds a retry back: the bucket paces every attempt at Send.
func (a *Adaptive) Retry(time.Duration, Outcome) bool { return true }

// record counts an answer at t and returns the measured rate.
func (a *Adaptive) record(t float64) float64 {
	bucket := math.Floor(t/adaptiveBucket) * adaptiveBucket
	a.count++
	if bucket > a.lastBucket {
		current := a.count / (bucket - a.lastBucket)
		a.measured = float64(current*adaptiveSmoothing) + float64(a.measured*(1-adaptiveSmoothing))
		a.count = 0
		a.lastBucket = bucket
	}
	return a.measured
}

// Observe measures the answer rate and moves the fill rate: down to Beta of the sending
// rate on a throttling answer, along the cubic otherwise.
func (a *Adaptive) Observe(now time.Duration, o, _ Outcome) {
	t := now.Seconds()
	a.start(t)
	measured := a.record(t)
	var rate float64
	if o == Throttled {
		use := measured
		if a.enabled {
			use = min(measured, a.fillRate)
		}
		a.wMax = use
		a.k = math.Cbrt(float64(a.wMax*(1-a.cfg.Beta)) / a.cfg.Scale)
		a.lastThrottle = t
		rate = float64(use * a.cfg.Beta)
		a.enabled = true
	} else {
		d := t - a.lastThrottle - a.k
		rate = float64(a.cfg.Scale*float64(float64(d*d)*d)) + a.wMax
	}
	a.setRate(t, min(rate, float64(adaptiveRateScale*measured)))
}

func (a *Adaptive) setRate(t, rate float64) {
	a.refill(t)
	a.fillRate = max(rate, a.cfg.MinRate)
	a.maxCapacity = max(rate, 1)
	a.capacity = min(a.capacity, a.maxCapacity)
}
