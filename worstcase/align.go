package worstcase

import (
	"fmt"
	"time"
)

// A limiter's windows may start where the clock says (multiples of W on the Unix clock),
// at a key's first request (HAProxy's stick-table periods, express-rate-limit's and
// rate-limiter-flexible's windows, a script's INCR + EXPIRE), or anywhere else a limiter
// the user brings decides (an offset of its own, a TTL rounded to whole seconds). The
// attacks of this file place their bursts against the last two: relative to a first
// request the attack itself sends, at an offset that is no clock edge, and against edges
// the limiter reveals when it is run.

// offEdge is the offset from s.edge of the first request of the attacks anchored at a
// key's first request away from the clock's edges: 3/7 of a window, a phase no clock,
// second or millisecond boundary of a round window shares.
func (s *searcher) offEdge() int64 { return s.w * 3 / 7 }

// epsilons are the distances short of an edge the attacks try: a nanosecond (the engine's
// resolution), a millisecond (the clock of the products that anchor windows at a first
// request), and a thousandth of a window (the real HAProxy case: bursts at 0 s, 9.99 s,
// 19.98 s at 10 s periods). Those not below a window's share of n+2 bursts are left out,
// and each appears once.
func (s *searcher) epsilons() []int64 {
	var out []int64
	for _, e := range []int64{1, int64(time.Millisecond), s.w / 1000} {
		if e <= 0 || e*(s.windows+2) >= s.w {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o == e
		}
		if !dup {
			out = append(out, e)
		}
	}
	return out
}

// firstRequestAttacks are the attacks anchored at a key's first request a, for a at the
// clock's edge and off it:
//
//   - first-request-train: 1 at a (it opens the key's first window), then B at
//     a + k·(W − ε) for k = 1..n+1, each burst ε earlier in its window than the one
//     before, so every pair of neighbours fits in one trailing window whichever period
//     each falls in. This is the real HAProxy case: at 20 per 10 s, bursts at 0 s, 9.99 s
//     and 19.98 s let 39 through one 10 s window, as HAProxy weighs the previous period by
//     the time left in the current one, almost nothing at its very end.
//   - primed-pair: 1 at a, B at a + W − ε, B at a + W — the window the first request
//     opened is filled at its very end, and the next opens at once.
//   - primed-window-ends (off-edge anchors only; structured has the one at the edge): 1
//     at a, then B a step before the end of each of the next n+1 periods.
func (s *searcher) firstRequestAttacks() []attack {
	var out []attack
	at := func(ns int64) time.Duration { return time.Duration(ns) }
	for _, anchor := range []struct {
		name string
		a    int64
	}{{"at an edge", s.edge}, {"off the edges", s.edge + s.offEdge()}} {
		a, w, big := anchor.a, s.w, s.big
		for _, eps := range s.epsilons() {
			train := Schedule{{at(a), 1}}
			for k := int64(1); k <= s.windows+1; k++ {
				train = append(train, Burst{at(a + k*(w-eps)), big})
			}
			out = append(out, attack{fmt.Sprintf("first-request-train %s %s", at(eps), anchor.name), train})
			if anchor.a != s.edge || eps != 1 { // the edge's 1 ns pair is structured's primed-pair
				out = append(out, attack{fmt.Sprintf("primed-pair %s %s", at(eps), anchor.name),
					Schedule{{at(a), 1}, {at(a + w - eps), big}, {at(a + w), big}}})
			}
		}
		if anchor.a != s.edge {
			out = append(out, attack{"primed-window-ends " + anchor.name, s.primedWindowEnds(a)})
		}
	}
	return out
}

// primedWindowEnds is 1 at a, then B a step before the end of the second window after it
// and B before the end of each of the next n, each a step earlier in its window. The step
// is a millisecond unless the windows are too short to hold n+2 of them.
func (s *searcher) primedWindowEnds(a int64) Schedule {
	step := int64(time.Millisecond)
	if (s.windows+2)*step >= s.w {
		step = max(s.w/(2*(s.windows+2)), 1)
	}
	primed := Schedule{{time.Duration(a), 1}}
	for k := int64(1); k <= s.windows+1; k++ {
		primed = append(primed, Burst{time.Duration(a + (k+1)*s.w - k*step), s.big})
	}
	return primed
}

// edges are what discover learned of a limiter by running it: after B requests at from,
// the first instant First at which it admits again, and the first instant after First at
// which it admits again once B more were sent at First. Period is their distance.
type edges struct {
	from, first, period int64
}

// discovery remembers what discover found for one target, whatever the window length T
// measured: the searches of one Find share it, so the limiter is probed once.
type discovery struct {
	done, ok bool
	edges    edges
}

// discover finds a limiter's own edges by bisection, each probe a fresh limiter replaying
// the prefix and one request more: B at from (the limiter refuses more), then the earliest
// instant in (from, from + 2W] at which one request passes; then, after B more there, the
// next such instant. It assumes a request refused at t would be refused at every earlier
// t (true of every window and bucket: time only gives back), and reports ok false when a
// limiter admits right after the prefix or never within two windows.
func (s *searcher) discover(from int64) (edges, bool, error) {
	prefix := Schedule{{time.Duration(from), s.big}}
	first, ok, err := s.nextAdmission(prefix, from)
	if err != nil || !ok {
		return edges{}, false, err
	}
	prefix = append(prefix, Burst{time.Duration(first), s.big})
	second, ok, err := s.nextAdmission(prefix, first)
	if err != nil || !ok {
		return edges{}, false, err
	}
	return edges{from: from, first: first, period: second - first}, true, nil
}

// nextAdmission is the earliest instant in (after, after + 2W] at which a request sent
// after prefix (whose last burst is at after) is admitted, when the limiter refuses one at
// after itself and admits one at after + 2W. The probe's request is the last one sent, so
// it was admitted when the probe admits more than the prefix alone.
func (s *searcher) nextAdmission(prefix Schedule, after int64) (int64, bool, error) {
	base, err := s.t.admissions(prefix)
	if err != nil {
		return 0, false, err
	}
	passes := func(t int64) (bool, error) {
		if err := s.stopped(); err != nil {
			return false, err
		}
		probe := append(prefix.clone(), Burst{time.Duration(t), 1})
		admitted, err := s.t.admissions(probe)
		return len(admitted) > len(base), err
	}
	lo, hi := after, after+2*s.w
	if ok, err := passes(lo); err != nil || ok {
		return 0, false, err
	}
	if ok, err := passes(hi); err != nil || !ok {
		return 0, false, err
	}
	for hi-lo > 1 { // passes(lo) is false, passes(hi) true
		mid := lo + (hi-lo)/2
		ok, err := passes(mid)
		if err != nil {
			return 0, false, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true, nil
}

// discoveredAttacks are the attacks against the edges the limiter revealed, found from
// an instant off the clock's edges: 1 at the discovery's start (it opens a window a first
// request opens), B−1 ε before the first edge, B on it, and B on each of the next n edges
// a period apart. Against windows at an offset of the limiter's own, this is the edge pair
// of the notes wherever the edges are.
func (s *searcher) discoveredAttacks() ([]attack, error) {
	d := s.discovered
	if d == nil {
		d = &discovery{}
	}
	if !d.done {
		e, ok, err := s.discover(s.edge + s.offEdge())
		if err != nil {
			return nil, err
		}
		*d = discovery{done: true, edges: e, ok: ok}
	}
	if !d.ok {
		return nil, nil
	}
	e := d.edges
	s.found = append(s.found, e)
	var out []attack
	at := func(ns int64) time.Duration { return time.Duration(ns) }
	for _, eps := range s.epsilons() {
		if eps >= e.first-e.from {
			continue
		}
		sched := Schedule{{at(e.from), 1}, {at(e.first - eps), max(s.big-1, 1)}, {at(e.first), s.big}}
		for k := int64(1); k <= s.windows && e.period > 0; k++ {
			sched = append(sched, Burst{at(e.first + k*e.period), s.big})
		}
		out = append(out, attack{fmt.Sprintf("discovered-edge %s", at(eps)), sched})
	}
	return out, nil
}
