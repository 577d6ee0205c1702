package report

import (
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

// ActorCount is what one attacker actor (a campaign) sent and got through.
type ActorCount struct {
	Actor    string `json:"actor"`
	Requests int64  `json:"requests"`
	Admitted int64  `json:"admitted"`
}

// LongRunWindows is how many policy windows long_run_peak spans.
const LongRunWindows = 10

// Harm measures who a run hurt: page loads with a refused request, legit actors refused
// at least once, what each attacker campaign got through, and the most one actor had
// admitted over LongRunWindows windows. It only counts requests that name an actor or a
// page load, so scripted and Poisson runs report none of it.
type Harm struct {
	longWindow int64

	pageLoads map[uint64]bool // page load → broken
	legit     map[string]*actorState
	attackers map[string]*ActorCount
	longPeak  int64
}

type actorState struct {
	blocked  bool
	admitted algorithms.Log
	peak     int64 // the most admitted in the long window, for merging
}

// NewHarm measures harm for a policy window of window.
func NewHarm(window time.Duration) *Harm {
	return &Harm{
		longWindow: int64(window) * LongRunWindows,
		pageLoads:  map[uint64]bool{},
		legit:      map[string]*actorState{},
		attackers:  map[string]*ActorCount{},
	}
}

// Observe records the final decision on r.
func (h *Harm) Observe(r *traffic.Request, allowed bool) {
	if r.PageLoad != 0 {
		h.pageLoads[r.PageLoad] = h.pageLoads[r.PageLoad] || !allowed
	}
	if r.Actor == "" {
		return
	}
	if r.Class == traffic.Attacker {
		a := h.attackers[r.Actor]
		if a == nil {
			a = &ActorCount{Actor: r.Actor}
			h.attackers[r.Actor] = a
		}
		a.Requests++
		if allowed {
			a.Admitted++
		}
		return
	}
	s := h.legit[r.Actor]
	if s == nil {
		s = &actorState{}
		h.legit[r.Actor] = s
	}
	if !allowed {
		s.blocked = true
		return
	}
	t := int64(r.At)
	s.admitted.Expire(t - h.longWindow)
	s.admitted.Push(t, r.Cost)
	s.peak = max(s.peak, s.admitted.Sum())
	h.longPeak = max(h.longPeak, s.peak)
}

// Fill adds the harm figures to res.
func (h *Harm) Fill(res *Result) {
	if n := len(h.pageLoads); n > 0 {
		broken := 0
		for _, b := range h.pageLoads {
			if b {
				broken++
			}
		}
		v := float64(broken) / float64(n)
		res.PageLoads = int64(n)
		res.BrokenPageLoads = &v
	}
	if n := len(h.legit); n > 0 {
		var blocked int64
		for _, s := range h.legit {
			if s.blocked {
				blocked++
			}
		}
		res.LegitUsers = int64(n)
		res.LegitUsersBlocked = &blocked
		peak := float64(h.longPeak) / LongRunWindows
		res.LongRunPeak = &peak
	}
	for _, a := range h.attackers {
		res.Attackers = append(res.Attackers, *a)
	}
	slices.SortFunc(res.Attackers, func(a, b ActorCount) int { return strings.Compare(a.Actor, b.Actor) })
}
