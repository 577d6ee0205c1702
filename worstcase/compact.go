package worstcase

import (
	"math"
	"time"
)

// Line is one script line of a printed schedule: Count requests from At, spread evenly over
// Spread exactly as a scenario's script line spreads them (the i-th of n at
// At + ⌊Spread·i/n⌋, see traffic.BurstSource), so a drip of single requests prints as one
// line and replays to the nanosecond.
type Line struct {
	At     time.Duration
	Count  int64
	Spread time.Duration
}

// maxRun bounds how many single requests one Line may gather; it keeps Lines linear-ish
// in the schedule's length (each extension re-checks the run).
const maxRun = 4096

// Lines prints s as script lines: a burst of several requests is a line of its own, and a
// run of single requests becomes one spread line whenever some whole Spread reproduces
// every one of their times exactly.
func (s Schedule) Lines() []Line {
	var out []Line
	for i := 0; i < len(s); {
		if s[i].Count != 1 {
			out = append(out, Line{At: s[i].At, Count: s[i].Count})
			i++
			continue
		}
		n, spread := 1, int64(0)
		for n < maxRun && i+n < len(s) && s[i+n].Count == 1 {
			sp, ok := spreadFor(s[i:i+n+1], s[i].At)
			if !ok {
				break
			}
			n, spread = n+1, sp
		}
		out = append(out, Line{At: s[i].At, Count: int64(n), Spread: time.Duration(spread)})
		i += n
	}
	return out
}

// spreadFor returns the smallest Spread S with ⌊S·k/n⌋ = run[k].At − start for every k, n
// = len(run), and whether there is one. ⌊S·k/n⌋ = d holds iff d·n ≤ S·k ≤ d·n + n − 1.
func spreadFor(run Schedule, start time.Duration) (int64, bool) {
	n := int64(len(run))
	lo, hi := int64(1), int64(math.MaxInt64)
	for k := int64(1); k < n; k++ {
		d := int64(run[k].At - start)
		if d > (math.MaxInt64-n)/n {
			return 0, false // beyond what int64 arithmetic checks safely
		}
		lo = max(lo, ceilDiv(d*n, k))
		hi = min(hi, (d*n+n-1)/k)
		if lo > hi {
			return 0, false
		}
	}
	return lo, true
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
