package scenario

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func init() {
	Register(GeneratorKind{Section: "script", New: func() Generator { return new(ScriptSpec) }, Plain: true})
}

// ScriptSpec is the script section: exact arrivals, one line each.
//
//   - script:
//   - {at: 59.9s, count: 100, key: user_8812}
//   - {at: "10:01:00.100", count: 100, key: user_8812, spread: 0s}
type ScriptSpec []ScriptLine

// ScriptLine is an exact arrival: Count requests for Key at At, spread evenly over Spread.
type ScriptLine struct {
	At Offset `yaml:"at"`
	// Count is the number of requests (default 1; 0 sends none).
	Count  *int64   `yaml:"count"`
	Key    string   `yaml:"key"`
	Spread Duration `yaml:"spread"`
	// Cost is each request's cost (default 1).
	Cost  *int64 `yaml:"cost"`
	Label string `yaml:"label"`
}

// maxCount bounds a script line so that a typo cannot ask for a trillion requests.
const maxCount = 1 << 32

// Defaults sets every line's count and cost to 1 where the file leaves them out.
func (s *ScriptSpec) Defaults() {
	for i := range *s {
		l := &(*s)[i]
		if l.Count == nil {
			l.Count = ptr(int64(1))
		}
		if l.Cost == nil {
			l.Cost = ptr(int64(1))
		}
	}
}

// Validate checks every line: a time within the scenario, a key, a count, a cost and a
// label that make sense.
func (s *ScriptSpec) Validate(c *Check) error {
	if len(*s) == 0 {
		return c.Fail("", "a script needs at least one line")
	}
	var units float64
	for j, l := range *s {
		f := fmt.Sprintf("[%d].", j)
		if !l.At.Set {
			return c.Fail(f+"at", "is required")
		}
		at := l.At.Resolve(c.Epoch)
		if at < 0 {
			return c.Fail(f+"at", "is before the scenario's start (%s)", c.Epoch.Format(time.RFC3339))
		}
		if c.Duration > 0 && at > c.Duration {
			return c.Fail(f+"at", "%s is after the scenario's duration %s", at, c.Duration)
		}
		if *l.Count < 0 || *l.Count > maxCount {
			return c.Fail(f+"count", "must be between 0 and %d, got %d", int64(maxCount), *l.Count)
		}
		if l.Key == "" {
			return c.Fail(f+"key", "is required")
		}
		if l.Spread < 0 {
			return c.Fail(f+"spread", "must not be negative")
		}
		if err := c.Cost(f+"cost", *l.Cost); err != nil {
			return err
		}
		if units += float64(*l.Count) * float64(*l.Cost); units > MaxRunUnits {
			return c.Fail(f+"count", "brings the script to %.3g units (requests × cost), more than the %.3g (2^62) a run counts", units, float64(MaxRunUnits))
		}
		if err := c.Label(f+"label", l.Label); err != nil {
			return err
		}
	}
	return nil
}

// Last is the end of the last line's arrivals.
func (s *ScriptSpec) Last(epoch time.Time) time.Duration {
	var last time.Duration
	for _, l := range *s {
		last = max(last, l.At.Resolve(epoch)+time.Duration(l.Spread))
	}
	return last
}

// Sources is one burst per line.
func (s *ScriptSpec) Sources(b *Build) []traffic.Source {
	out := make([]traffic.Source, 0, len(*s))
	for _, l := range *s {
		class, _ := traffic.ParseClass(l.Label)
		out = append(out, traffic.NewBurst(traffic.Burst{
			At: b.At(l.At), Count: *l.Count, Spread: time.Duration(l.Spread),
			Key: l.Key, Cost: *l.Cost, Class: class,
		}))
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// Units is the sum of the lines' counts times their costs.
func (s *ScriptSpec) Units(*Build) float64 {
	var n float64
	for _, l := range *s {
		n += float64(*l.Count) * float64(*l.Cost)
	}
	return n
}

// Requests is the sum of the lines' counts.
func (s *ScriptSpec) Requests(*Build) float64 {
	var n float64
	for _, l := range *s {
		n += float64(*l.Count)
	}
	return n
}
