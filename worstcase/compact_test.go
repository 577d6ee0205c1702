package worstcase

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// expand replays lines through the scenario runner's own source for script lines.
func expand(lines []Line) []int64 {
	var out []int64
	for _, l := range lines {
		src := traffic.NewBurst(traffic.Burst{At: l.At, Count: l.Count, Spread: l.Spread, Key: AttackerKey})
		var r traffic.Request
		for src.Next(&r) {
			out = append(out, int64(r.At))
		}
	}
	return out
}

func times(s Schedule) []int64 {
	var out []int64
	for _, b := range s {
		for range b.Count {
			out = append(out, int64(b.At))
		}
	}
	return out
}

func TestLinesReplayExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for trial := range 300 {
		var s Schedule
		at := time.Duration(rng.Int64N(1e9))
		gap := time.Duration(1 + rng.Int64N(1e9))
		for range 1 + rng.IntN(60) {
			switch rng.IntN(4) {
			case 0: // jitter breaks a drip
				at += time.Duration(rng.Int64N(int64(gap)) + 1)
			case 1: // a burst
				s = append(s, Burst{At: at, Count: 2 + rng.Int64N(5)})
				at += gap
				continue
			default: // a steady drip
				at += gap
			}
			s = append(s, Burst{At: at, Count: 1})
		}
		s = s.normalize()
		got, want := expand(s.Lines()), times(s)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d requests from the lines, %d in the schedule", trial, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("trial %d: request %d at %d, want %d (lines %+v)", trial, i, got[i], want[i], s.Lines())
			}
		}
	}
}

func TestDripIsOneLine(t *testing.T) {
	var s Schedule
	for k := range 100 {
		s = append(s, Burst{At: time.Minute + time.Duration(k)*600*time.Millisecond, Count: 1})
	}
	lines := s.Lines()
	if len(lines) != 1 || lines[0].Count != 100 || lines[0].Spread != 60*time.Second {
		t.Fatalf("lines = %+v, want one line of 100 over 1m", lines)
	}
	// A drip at 1/3 ns steps needs the floor of the spread formula to land exactly.
	s = nil
	for k := range 7 {
		s = append(s, Burst{At: time.Duration(k * 333333), Count: 1})
	}
	if got, want := expand(s.Lines()), times(s); len(s.Lines()) != 1 || len(got) != len(want) {
		t.Fatalf("lines %+v", s.Lines())
	}
}
