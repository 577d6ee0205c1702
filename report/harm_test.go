package report

import (
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

func TestHarmCountsBrokenPageLoadsAndBlockedUsers(t *testing.T) {
	h := NewHarm(time.Second)
	obs := func(at time.Duration, actor string, class traffic.Class, load uint64, ok bool) {
		h.Observe(&traffic.Request{At: at, Actor: actor, Class: class, PageLoad: load, Cost: 1}, ok)
	}
	obs(0, "u1", traffic.Legit, 1, true)
	obs(0, "u1", traffic.Legit, 1, false) // breaks load 1 and blocks u1
	obs(0, "u2", traffic.Legit, 2, true)
	obs(0, "u2", traffic.Legit, 2, true)
	obs(0, "u3", traffic.Legit, 0, true)
	obs(0, "bot", traffic.Attacker, 0, true)
	obs(0, "bot", traffic.Attacker, 0, false)
	obs(0, "", traffic.Legit, 0, false) // untracked
	var r Result
	h.Fill(&r)
	if r.PageLoads != 2 || *r.BrokenPageLoads != 0.5 {
		t.Errorf("page loads %d broken %v", r.PageLoads, *r.BrokenPageLoads)
	}
	if r.LegitUsers != 3 || *r.LegitUsersBlocked != 1 {
		t.Errorf("legit users %d blocked %d", r.LegitUsers, *r.LegitUsersBlocked)
	}
	if len(r.Attackers) != 1 || r.Attackers[0] != (ActorCount{Actor: "bot", Requests: 2, Admitted: 1}) {
		t.Errorf("attackers %+v", r.Attackers)
	}
}

func TestLongRunPeakSpansTenWindows(t *testing.T) {
	h := NewHarm(time.Second)
	// 15 admitted per second for 20 s: any 10 s hold 150, so 15 per window.
	for i := range 300 {
		h.Observe(&traffic.Request{At: time.Duration(i) * time.Second / 15, Actor: "u", Cost: 1}, true)
	}
	var r Result
	h.Fill(&r)
	if *r.LongRunPeak < 14.9 || *r.LongRunPeak > 15.1 {
		t.Fatalf("long-run peak %v, want 15", *r.LongRunPeak)
	}
}

func TestLayeredResultJudgesEachLayerOnItsOwnPromise(t *testing.T) {
	// Two layers of 2 per second; the second refuses the third request, the first never.
	mk := func(limit int64) LayerCell {
		p := algorithms.Policy{Limit: limit, Window: time.Second}
		lim, _ := algorithms.New("sliding-log", p)
		return LayerCell{Collector: NewCollector(limit, time.Second, time.Second), Limiter: lim}
	}
	wide, narrow := mk(10), mk(2)
	out := NewOutcomeCollector(time.Second)
	l := Layered{Outcome: out, Cells: [][]LayerCell{{narrow}, {wide}}, Layers: []LayerCount{{Layer: "narrow"}, {Layer: "wide"}}}
	for i := range 3 {
		t0 := int64(i)
		d := narrow.Limiter.Allow(0, t0, 1)
		narrow.Collector.Observe(0, t0, 1, traffic.Legit, d)
		if d.Allowed {
			wide.Collector.Observe(0, t0, 1, traffic.Legit, wide.Limiter.Allow(0, t0, 1))
		}
		out.Observe(0, t0, 1, traffic.Legit, d)
	}
	r := l.Result("sliding-log")
	if r.Requests != 3 || r.Admitted != 2 || r.FalseAllow != 0 || r.FalseReject != 0 || r.PeakWindowAdmitted != 2 || r.OverAdmission != 1 {
		t.Fatalf("%+v", r)
	}
	if r.Keys != 2 || len(r.RefusalsByLayer) != 2 {
		t.Fatalf("keys %d layers %+v", r.Keys, r.RefusalsByLayer)
	}
}
