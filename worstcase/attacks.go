package worstcase

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// attack is a structured candidate before it is measured.
type attack struct {
	name     string
	schedule Schedule
}

// structured returns the family of hand-built attacks, in a fixed order. Offsets are
// relative to s.edge, a window start of the fixed-window family; B is the most one
// instant can get through, max(Limit, Burst); n = ⌈T/W⌉.
//
//   - edge-pair: B just before an edge and B on it — the boundary case of the notes.
//   - edge-train: B just before an edge, then B at each of the next n+1 edges, to cross
//     as many aligned windows as a span of T meets.
//   - window-ends: B at the very end of n+1 consecutive windows, the last a nanosecond
//     earlier in its window than the first, so all fit in one trailing window: each burst
//     lands where the two-counter estimate gives the previous window almost no weight.
//   - greedy: a client that sends as fast as the limiter lets it from an instant on,
//     retrying exactly when RetryAfter says — a full burst and then a drip at the refill
//     rate, timed against the estimate's decaying weight.
//   - burst-then-greedy-late: B at the end of a window, silence, then greedy from late in
//     the next window, when the estimate has all but forgotten the burst.
//   - burst-then-drip: B, then one request every W/L, not adaptive.
//   - uniform: one request every W/L throughout — the spread the estimate assumes.
//   - primed-pair: 1 on an edge, B a nanosecond before
//     the next, B on it — against a window opened by a key's first request.
//   - pause-reset: greedy through one Unix second, silent until the second P whole
//     seconds on, again (P = 2 s, 3 s) — against a limiter that throws away the state of a
//     key idle for a TTL counted in whole seconds, and gives it back full (Traefik's).
//   - primed-window-ends: 1 on an edge, then B a millisecond before the end of the
//     second window after it and B before the end of each of the next n, each a
//     millisecond earlier in its window, so all fit in one trailing window — against
//     periods that follow each other from a key's first request and weigh the previous
//     one by the time left (HAProxy's stick-table rate), which gives a burst at a
//     period's very end almost none of the burst before it.
//   - the attacks of align.go: trains and primed pairs anchored at a key's first request,
//     at the clock's edge and off it (first-request-train, primed-pair … off the edges),
//     and edge pairs against the edges the limiter reveals when run (discovered-edge).
func (s *searcher) structured() ([]attack, error) {
	e, w, n, big := s.edge, s.w, s.windows, s.big
	at := func(ns int64) time.Duration { return time.Duration(ns) }
	var out []attack
	add := func(name string, sched Schedule) { out = append(out, attack{name, sched}) }

	for _, d := range []time.Duration{time.Nanosecond, time.Millisecond, 100 * time.Millisecond} {
		if int64(d) >= w {
			continue
		}
		add(fmt.Sprintf("edge-pair %s", d), Schedule{{at(e - int64(d)), big}, {at(e), big}})
	}

	// A limiter may start its window at a key's first request (INCR then EXPIRE, as a
	// user's script may): one request opens it, the rest of the burst fills its end,
	// and a second burst comes as it expires.
	add("primed-pair", Schedule{{at(e), 1}, {at(e + w - 1), big}, {at(e + w), big}})

	add("primed-window-ends", s.primedWindowEnds(e))
	out = append(out, s.firstRequestAttacks()...)
	found, err := s.discoveredAttacks()
	if err != nil {
		return nil, err
	}
	out = append(out, found...)

	train := Schedule{{at(e - 1), big}}
	for k := int64(0); k <= n; k++ {
		train = append(train, Burst{at(e + k*w), big})
	}
	add("edge-train", train)

	ends := Schedule{{at(e - 1), big}}
	for k := int64(1); k <= n; k++ {
		ends = append(ends, Burst{at(e + k*w - 2), big})
	}
	add("window-ends", ends)

	horizon := s.span + w
	for _, start := range []struct {
		name string
		at   int64
	}{
		{"greedy from t=0", 0},
		{"greedy from edge−1ns", e - 1},
		{"greedy from edge−1ms", e - int64(time.Millisecond)},
		{"greedy from edge", e},
		{"greedy from mid-window", e + w/2},
	} {
		if start.at < 0 {
			continue
		}
		g, err := s.greedy(nil, start.at, start.at+horizon)
		if err != nil {
			return nil, err
		}
		add(start.name, g)
	}

	for _, late := range []int64{2, s.gap, w / 4, w / 2} {
		if late <= 0 || late >= w {
			continue
		}
		from := e + w - late
		g, err := s.greedy(Schedule{{at(e - 1), big}}, from, from+horizon)
		if err != nil {
			return nil, err
		}
		add(fmt.Sprintf("burst-then-greedy from %s before the next edge", at(late)), g)
	}

	second := int64(time.Second)
	first := (second - ((s.t.Epoch%second)+second)%second) % second // the first whole Unix second
	for _, period := range []int64{2, 3} {
		var sched Schedule
		for start := first; start <= s.span+w && int64(len(sched)) < s.capacity; start += period * second {
			g, err := s.greedy(sched, start, start+second-1)
			if err != nil {
				return nil, err
			}
			sched = g
		}
		add(fmt.Sprintf("pause-reset every %ds", period), sched)
	}

	drip := Schedule{{at(e - 1), big}}
	for k := int64(1); k*s.gap <= s.span+w && int64(len(drip)) < s.capacity; k++ {
		drip = append(drip, Burst{at(e - 1 + k*s.gap), 1})
	}
	add("burst-then-drip", drip)

	var uniform Schedule
	for k := int64(0); k*s.gap <= e+s.span+w && int64(len(uniform)) < s.capacity; k++ {
		uniform = append(uniform, Burst{at(k * s.gap), 1})
	}
	add("uniform", uniform)
	return out, nil
}

// greedy runs prefix through a fresh limiter, then from instant from to until sends
// requests as fast as the limiter admits them: again at once after an admission, and
// after a refusal exactly when its RetryAfter says one could pass. It returns prefix
// followed by the admitted requests (refused probes change no limiter's state, so they
// are left out). The schedule is measured again like any other candidate.
//
// A limiter the user brings (Target.Own) may give no RetryAfter, or a wrong one: after a
// refusal it is probed again no sooner than W/L later, and at most capacity refused
// probes are sent, so the attack ends whatever it answers.
func (s *searcher) greedy(prefix Schedule, from, until int64) (Schedule, error) {
	if err := s.stopped(); err != nil {
		return nil, err
	}
	lim, err := s.t.limiter()
	if err != nil {
		return nil, err
	}
	out := prefix.clone()
	sent := int64(0)
	for _, b := range prefix {
		for range b.Count {
			lim.Allow(0, s.t.Epoch+int64(b.At), 1)
		}
		sent += b.Count
	}
	now, refused := from, int64(0)
	for now <= until && sent < s.capacity {
		d := lim.Allow(0, s.t.Epoch+now, 1)
		if d.Allowed {
			out = appendOne(out, now)
			sent++
			continue
		}
		if d.RetryAfter == algorithms.Never {
			break
		}
		step := max(int64(d.RetryAfter), 1)
		if s.t.Own != nil {
			if refused++; refused > s.capacity {
				break
			}
			step = max(step, s.gap)
		}
		now += step
	}
	if err := algorithms.Finish(lim); err != nil {
		return nil, err
	}
	return out, nil
}

// appendOne adds one request at t to s, joining a burst already at t.
func appendOne(s Schedule, t int64) Schedule {
	if n := len(s); n > 0 && int64(s[n-1].At) == t {
		s[n-1].Count++
		return s
	}
	return append(s, Burst{At: time.Duration(t), Count: 1})
}
