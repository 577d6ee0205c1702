package worstcase

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"
)

// starts is how many of the best structured attacks the local search climbs from.
const starts = 3

// localSearch perturbs the best structured candidates budget times in all — shifting a
// burst in time by anything from a nanosecond to a window, changing its count, splitting,
// merging, adding or dropping bursts, shifting everything after a point — and keeps a
// perturbation when the engine measures more admitted in some window (or as many with
// fewer requests). The chains take turns, so each gets about budget/starts evaluations.
func (s *searcher) localSearch(pool []candidate, budget int, rng *rand.Rand) (candidate, int, error) {
	ranked := slices.Clone(pool)
	slices.SortStableFunc(ranked, func(a, b candidate) int {
		switch {
		case a.better(b):
			return -1
		case b.better(a):
			return 1
		}
		return 0
	})
	chains := ranked[:min(starts, len(ranked))]
	best := chains[0]
	evaluated := 0
	for i := range budget {
		k := i % len(chains)
		cur := chains[k]
		next := s.perturb(cur.schedule, rng)
		if next == nil {
			continue
		}
		c, err := s.measure(cur.name, next)
		if err != nil {
			return best, evaluated, err
		}
		evaluated++
		if c.better(cur) {
			if c.measure.Peak > cur.measure.Peak {
				c.name = searchName(cur.name)
			}
			chains[k] = c
			if c.better(best) {
				best = c
			}
		}
	}
	return best, evaluated, nil
}

func searchName(from string) string {
	const prefix = "search from "
	if len(from) >= len(prefix) && from[:len(prefix)] == prefix {
		return from
	}
	return prefix + from
}

// perturb returns a changed copy of sched, or nil when the change would exceed the
// request cap.
func (s *searcher) perturb(sched Schedule, rng *rand.Rand) Schedule {
	out := sched.clone()
	if len(out) == 0 {
		out = Schedule{{At: time.Duration(s.edge), Count: 1}}
	}
	i := rng.IntN(len(out))
	switch rng.IntN(7) {
	case 0: // move one burst
		out[i].At += s.shift(rng)
	case 1: // change one burst's count
		out[i].Count += s.countStep(out[i].Count, rng)
	case 2: // split part of a burst off to a nearby instant
		part := 1 + rng.Int64N(max(out[i].Count, 1))
		out[i].Count -= part
		out = append(out, Burst{At: out[i].At + s.shift(rng), Count: part})
	case 3: // merge a burst into its neighbour
		if j := i + 1; j < len(out) {
			out[j].Count += out[i].Count
			out[i].Count = 0
		} else {
			out[i].At += s.shift(rng)
		}
	case 4: // drop a burst
		out[i].Count = 0
	case 5: // add a burst around an edge, or anywhere in the schedule's span
		at := s.anchor(out, rng)
		out = append(out, Burst{At: at + s.shift(rng), Count: 1 + rng.Int64N(s.big)})
	case 6: // shift everything from one burst on
		d := s.shift(rng)
		for j := i; j < len(out); j++ {
			out[j].At += d
		}
	}
	out = out.normalize()
	if len(out) == 0 || out.Requests() > s.capacity {
		return nil
	}
	return out
}

// shift draws a time step of random sign whose size is spread evenly over the powers of
// two from a nanosecond to a window, so both nanosecond edge timing and moves across
// windows are tried.
func (s *searcher) shift(rng *rand.Rand) time.Duration {
	top := bits.Len64(uint64(s.w))
	size := int64(1) << rng.IntN(top)
	d := 1 + rng.Int64N(size)
	if rng.IntN(2) == 0 {
		d = -d
	}
	return time.Duration(d)
}

// countStep draws a change of a burst's count: small steps mostly, sometimes a quarter.
func (s *searcher) countStep(count int64, rng *rand.Rand) int64 {
	step := 1 + rng.Int64N(max(count/4, 1))
	if rng.IntN(2) == 0 {
		return -step
	}
	return step
}

// anchor draws where case 5 of perturb adds a burst: a window edge of one of the three
// alignments a limiter may have — the clock's (s.edge + k·W), the key's first request in
// sched (its first burst + k·W), the edges the limiter revealed (discover: First +
// k·Period) — or anywhere in sched's span, each alike often (the revealed edges only when
// there are some).
func (s *searcher) anchor(sched Schedule, rng *rand.Rand) time.Duration {
	k := rng.Int64N(s.windows + 2)
	kinds := 3
	if len(s.found) > 0 {
		kinds = 4
	}
	switch rng.IntN(kinds) {
	case 0:
		return time.Duration(s.edge + k*s.w)
	case 1:
		return sched[0].At + time.Duration(k*s.w)
	case 2:
		last := sched[len(sched)-1].At
		return time.Duration(rng.Int64N(int64(last) + 1))
	}
	e := s.found[rng.IntN(len(s.found))]
	return time.Duration(e.first + k*max(e.period, 1))
}
