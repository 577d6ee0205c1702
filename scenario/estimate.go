package scenario

// Estimator is a generator that can say before a run how many requests it sends in it:
// exactly (a script) or on average (its rates times the time it runs for). Requests
// leaves out the sections whose generator cannot say.
type Estimator interface {
	// Requests is the number of requests the section sends in a run built as b says.
	Requests(b *Build) float64
}

// UnitEstimator is an Estimator whose requests cost more than one unit each.
type UnitEstimator interface {
	// Units is the units (requests times their cost) the section sends in a run built as
	// b says.
	Units(b *Build) float64
}

// MaxRunUnits bounds the units (requests times their cost) a run of a scenario sends, as
// Units estimates them: 2^62, half of what an int64 counts, so that no sum of costs a run
// keeps — a key's admitted units in a window, the units reaching the backend — can wrap,
// even when the traffic draws twice its expectation.
const MaxRunUnits = 1 << 62

// Units is the units (requests times their cost) a run of the scenario sends, expected,
// of the same requests as Requests counts; the sections that are no UnitEstimator cost
// one unit a request.
func (s *Scenario) Units() float64 {
	b := &Build{Epoch: s.EpochTime(), Horizon: s.Horizon()}
	var n float64
	for _, t := range s.Traffic {
		n += units(t.Spec, b)
	}
	return n + s.ClientRequests()
}

// units is a section's estimated units.
func units(g Generator, b *Build) float64 {
	switch e := g.(type) {
	case UnitEstimator:
		return e.Units(b)
	case Estimator:
		return e.Requests(b)
	}
	return 0
}

// Requests is the number of requests a run of the scenario sends, expected: every
// traffic section whose generator is an Estimator, and the first attempts
// of the closed-loop clients in each of their runs (their retries, which depend on the
// decisions, come on top). Commands read it to ask before a run that would last hours.
func (s *Scenario) Requests() float64 {
	b := &Build{Epoch: s.EpochTime(), Horizon: s.Horizon()}
	var n float64
	for _, t := range s.Traffic {
		if e, ok := t.Spec.(Estimator); ok {
			n += e.Requests(b)
		}
	}
	return n + s.ClientRequests()
}

// ClientRequests is the part of Requests the closed-loop clients send: every client's
// first attempts, in every run of every strategy.
func (s *Scenario) ClientRequests() float64 {
	c := s.Clients
	if c == nil {
		return 0
	}
	return float64(c.Count) * float64(max(c.Requests, 1)) * float64(max(len(c.Strategies), 1)) * float64(max(c.Runs, 1))
}

// seconds is how long a section whose span is start to end runs, in seconds.
func seconds(b *Build, start, end Offset) float64 {
	from, to := b.Span(start, end)
	return max(to-from, 0).Seconds()
}
