package algorithms

import (
	"strings"
	"time"
)

// Counter is one of the window counters of a model whose shared form is a set of them in
// the store, every one of which must admit (Kong's periods with policy=redis): the
// counter of the current window, which every request adds its cost to, admitted or not.
type Counter struct {
	// Name is the counter's name among the spec's ("second" … "year" for Kong): it
	// names the counter in the store.
	Name string
	// Limit is the counter's limit, in requests.
	Limit int64
	// TTL is the counter's time to live from its creation: the window's length, or
	// longer for a calendar window (Kong: 30 days for a month, 365 for a year).
	TTL time.Duration

	windows kongWindows
}

// Window returns the window of the counter that holds now (Unix nanoseconds): its start
// and end, in Unix seconds.
func (p Counter) Window(now int64) (start, end int64) {
	p.windows.find(nsToMs(now))
	return p.windows.start / 1000, p.windows.end / 1000
}

// CountedModel is a model that may have a shared form of window counters (Kind.Counters).
type CountedModel interface {
	Model
	// Counters returns the counters, shortest window first; ok is false when this
	// spec has no such form.
	Counters() (counters []Counter, ok bool)
}

// SharedCounters returns the counters of spec, shortest window first, when its shared
// form is window counters in the store, every one of which must admit; ok is false for
// any other spec.
func SharedCounters(spec string) (counters []Counter, ok bool) {
	s, err := Parse(spec)
	if err != nil {
		return nil, false
	}
	m, counted := s.Model.(CountedModel)
	if !counted {
		return nil, false
	}
	return m.Counters()
}

// CountersHint names the specs whose shared form is window counters, for an error that
// wants one ("kong:… with policy=redis").
func CountersHint() string {
	var hints []string
	for _, k := range ranked {
		if k.Counters != "" {
			hints = append(hints, k.Name+":… with "+k.Counters)
		}
	}
	return "want " + strings.Join(hints, ", or ")
}
