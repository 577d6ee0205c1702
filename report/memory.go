package report

import (
	"fmt"

	"github.com/rlsim/rlsim/algorithms"
)

// Memory is what a run holds for its keys once it has seen them all, per key and in
// total. A run keeps no record per request (unless a decisions file is asked for, and that
// is streamed to disk), so this is the memory that grows with a scenario: the process's
// peak resident size is this plus a constant (the Go runtime, buffers, one pending request
// per traffic source).
type Memory struct {
	// Keys is the number of keys state is held for (the largest key id plus one).
	Keys int `json:"keys"`
	// BytesPerKey breaks the bytes down by what holds them, summed over the algorithms run.
	BytesPerKey MemoryBreakdown `json:"bytes_per_key"`
	// Buffers is what a run holds whatever its keys: a replay's reorder window and the
	// chunks of the log and of decisions in flight. It is 0 for runs of scenarios.
	Buffers int64 `json:"buffers,omitempty"`
	// Bytes is BytesPerKey.Total times Keys, plus Buffers: everything the run holds.
	Bytes int64 `json:"bytes"`
}

// AddBuffers counts b bytes of buffers in the memory held.
func (m *Memory) AddBuffers(b int64) {
	m.Buffers += b
	m.Bytes += b
}

// MemoryBreakdown is bytes per key, by holder.
type MemoryBreakdown struct {
	// AlgorithmState is the limiters' own state (their StateBytes).
	AlgorithmState float64 `json:"algorithm_state"`
	// Reference is the per-key window of admitted (time, cost) that both the exact
	// reference verdicts and peak_window_admitted read (Collector.TrackerBytes): one
	// window per key for all the algorithms of a pass (see Group).
	Reference float64 `json:"reference"`
	// InternedKeys is the table that turns key names into integer ids. Generated keys
	// are numbered without one, so it holds only the names of scripted keys.
	InternedKeys float64 `json:"interned_keys"`
	// Total is the sum of the above.
	Total float64 `json:"total"`
}

// String is the one-line summary printed under a results table.
func (m *Memory) String() string {
	b := m.BytesPerKey
	s := fmt.Sprintf("memory: %d keys × %.0f B/key = %.1f MiB held (algorithm state %.0f, reference %.0f, interned keys %.0f B/key)",
		m.Keys, b.Total, float64(m.Bytes-m.Buffers)/(1<<20), b.AlgorithmState, b.Reference, b.InternedKeys)
	if m.Buffers > 0 {
		s += fmt.Sprintf(", and %.1f MiB of buffers: %.1f MiB in all", float64(m.Buffers)/(1<<20), float64(m.Bytes)/(1<<20))
	}
	return s
}

// MemoryOf totals the memory of limiters measured by cols (pairwise) and of an
// interning table of internBytes. Windows shared by the collectors of a Group count once.
func MemoryOf(lims []algorithms.Limiter, cols []*Collector, internBytes int64) *Memory {
	var state, ref int64
	keys := 0
	seen := map[*keyWindows]bool{}
	for i, l := range lims {
		state += max(l.StateBytes(), 0) // a limiter whose state is not here holds none here
		if w := cols[i].windows; !seen[w] {
			seen[w] = true
			ref += w.bytes()
			keys = max(keys, w.keys())
		}
		keys = max(keys, l.Keys())
	}
	m := &Memory{Keys: keys, Bytes: state + ref + internBytes}
	if keys == 0 {
		return m
	}
	per := func(b int64) float64 { return float64(b) / float64(keys) }
	m.BytesPerKey = MemoryBreakdown{
		AlgorithmState: per(state),
		Reference:      per(ref),
		InternedKeys:   per(internBytes),
		Total:          per(m.Bytes),
	}
	return m
}

// ReleaseIdleWindows is Group.ReleaseIdleWindows for a collector measuring alone.
func (c *Collector) ReleaseIdleWindows() { c.windows.releaseIdle = true }

// Reserve makes room for keys keys up front, so that a run whose key space is known does
// not regrow (and leave behind for the garbage collector) its per-key windows.
func (c *Collector) Reserve(keys int) {
	c.windows.reserve(keys)
}
