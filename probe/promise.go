package probe

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// The verdicts of a promise judged on arrivals known to within a jitter: broke when a
// window held more than the limit wherever within the jitter the requests arrived, kept
// otherwise. A kept verdict is "within jitter" when some placement of the arrivals within
// the jitter puts more than the limit in one window: the run cannot tell, and the verdict
// says how many requests that is rather than flipping with them run to run.
const (
	Kept  = "kept"
	Broke = "broke"
)

// PromiseAllowed is the promise's decision for one request: allowed, refused, or
// either, when it turns on where within the jitter the requests arrived.
type PromiseAllowed int8

const (
	PromiseRefused PromiseAllowed = iota
	PromiseAllowedSure
	PromiseEither
)

// String is "true", "false" or "either", as the decisions file writes it.
func (p PromiseAllowed) String() string {
	return [...]string{"false", "true", "either"}[p]
}

// Promise is the promise "Limit units in any trailing Window" judged on the estimated
// arrivals, in order of arrival, each known to within ±Jitter: two arrivals' distance is
// then known to within 2·Jitter, so a window is looked at as short as Window − 2·Jitter
// (what surely fell into one window) and as long as Window + 2·Jitter (what may have).
type Promise struct {
	Verdict string `json:"verdict"`
	// Uncertain, for a kept verdict, is how many admissions beyond the limit a window may
	// hold with arrivals moved within the jitter (0: none, whatever the jitter).
	Uncertain int64   `json:"within_jitter"`
	JitterMS  float64 `json:"jitter_ms"`
	// PeakSure is the most admitted cost surely in one window, Peak on the estimated
	// arrivals, PeakMay the most that may have been.
	PeakSure int64 `json:"peak_sure"`
	Peak     int64 `json:"peak"`
	PeakMay  int64 `json:"peak_may"`
	// FalseRejects are refusals the promise allowed whatever the jitter, and
	// FalseRejectsWithinJitter those it allowed only for some arrivals within it; the
	// rates divide by the decisions.
	FalseRejects             int64   `json:"false_rejects"`
	FalseRejectsWithinJitter int64   `json:"false_rejects_within_jitter"`
	FalseRejectRate          float64 `json:"false_reject_rate"`
	// Allowed is the promise's decision for each decision, in the order observed.
	Allowed []PromiseAllowed `json:"-"`
}

// JudgePromise judges obs against policy's promise (see Promise).
func JudgePromise(obs Observed, policy algorithms.Policy) Promise {
	j2 := 2 * int64(obs.Jitter)
	w := int64(policy.Window)
	short, long := max(w-j2, 0), w+j2
	type keyLog struct{ at, cost []int64 }
	logs := map[string]*keyLog{}
	// sum is the admitted cost of k in (t − span, t].
	sum := func(k *keyLog, t, span int64) int64 {
		var s int64
		for i := len(k.at) - 1; i >= 0 && k.at[i] > t-span; i-- {
			s += k.cost[i]
		}
		return s
	}
	p := Promise{Verdict: Kept, JitterMS: ms(obs.Jitter), Allowed: make([]PromiseAllowed, len(obs.Decisions))}
	for i, d := range obs.Decisions {
		k := logs[d.Key]
		if k == nil {
			k = &keyLog{}
			logs[d.Key] = k
		}
		// Only the last window's worth is read: drop what even the long window has left.
		for len(k.at) > 0 && k.at[0] <= d.Arrival-long {
			k.at, k.cost = k.at[1:], k.cost[1:]
		}
		sure, may := sum(k, d.Arrival, short), sum(k, d.Arrival, long)
		switch {
		case d.Cost <= policy.Limit-may:
			p.Allowed[i] = PromiseAllowedSure
		case d.Cost > policy.Limit-sure:
			p.Allowed[i] = PromiseRefused
		default:
			p.Allowed[i] = PromiseEither
		}
		if d.Admitted {
			k.at, k.cost = append(k.at, d.Arrival), append(k.cost, d.Cost)
			p.PeakSure = max(p.PeakSure, sure+d.Cost)
			p.Peak = max(p.Peak, sum(k, d.Arrival, w))
			p.PeakMay = max(p.PeakMay, may+d.Cost)
			continue
		}
		switch p.Allowed[i] {
		case PromiseAllowedSure:
			p.FalseRejects++
		case PromiseEither:
			p.FalseRejectsWithinJitter++
		}
	}
	// A window of W − 2j holding what it holds may also be the start of a longer one: the
	// may-peak is never below the sure one.
	switch {
	case p.PeakSure > policy.Limit:
		p.Verdict = Broke
	case p.PeakMay > policy.Limit:
		p.Uncertain = p.PeakMay - policy.Limit
	}
	if n := len(obs.Decisions); n > 0 {
		p.FalseRejectRate = float64(p.FalseRejects) / float64(n)
	}
	return p
}

// Text is the verdict as the probe prints it: "kept: …", "broke: …" or "kept within
// jitter (1 request): …", with the jitter.
func (p Promise) Text(policy algorithms.Policy) string {
	jitter := time.Duration(p.JitterMS * float64(time.Millisecond)).Round(10 * time.Microsecond)
	switch p.Verdict {
	case Broke:
		return fmt.Sprintf("broke: %d surely in one window of %s (limit %d; jitter ±%s)", p.PeakSure, policy.Window, policy.Limit, jitter)
	case Kept:
		if p.Uncertain == 0 {
			break
		}
		s := "s"
		if p.Uncertain == 1 {
			s = ""
		}
		return fmt.Sprintf("kept within jitter (%d request%s): %d surely in one window of %s, %d on the estimates, %d if arrivals moved by ±%s",
			p.Uncertain, s, p.PeakSure, policy.Window, p.Peak, p.PeakMay, jitter)
	}
	return fmt.Sprintf("kept: at most %d in one window of %s, whatever the jitter ±%s", p.PeakMay, policy.Window, jitter)
}
