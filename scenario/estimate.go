package scenario

import "time"

// Estimator is a generator that can say before a run how many requests it sends in it:
// exactly (a script) or on average (its rates times the time it runs for). Requests
// leaves out the sections whose generator cannot say.
type Estimator interface {
	// Requests is the number of requests the section sends in a run built as b says.
	Requests(b *Build) float64
}

// Requests is the number of requests a run of the scenario sends, expected: the recorded
// traffic, and every traffic section whose generator is an Estimator. Commands read it to
// ask before a run that would last hours.
func (s *Scenario) Requests() float64 {
	b := &Build{Epoch: s.EpochTime(), Horizon: s.Horizon()}
	n := float64(len(s.Recorded))
	for _, t := range s.Traffic {
		if e, ok := t.Spec.(Estimator); ok {
			n += e.Requests(b)
		}
	}
	return n
}

// seconds is how long a section whose span is start to end runs, in seconds.
func seconds(b *Build, start, end Offset) float64 {
	from, to := b.Span(start, end)
	return max(to-from, 0).Seconds()
}

// Requests is the sum of the lines' counts.
func (s *ScriptSpec) Requests(*Build) float64 {
	var n float64
	for _, l := range *s {
		n += float64(*l.Count)
	}
	return n
}

// Requests is the rate times the span.
func (p *PoissonSpec) Requests(b *Build) float64 { return p.Rate * seconds(b, p.Start, p.End) }

// Requests is the rate times the span.
func (r *RotationSpec) Requests(b *Build) float64 { return r.Rate * seconds(b, r.Start, r.End) }

// Requests is every user's rate times the span.
func (n *NATCrowdSpec) Requests(b *Build) float64 {
	return float64(n.Users) * n.RatePerUser * seconds(b, n.Start, n.End)
}

// Requests is every user's rate times the span.
func (w *CostWeightedSpec) Requests(b *Build) float64 {
	return float64(w.Users) * w.RatePerUser * seconds(b, w.Start, w.End)
}

// Requests is every tenant's users' rate times its span.
func (t *TenantsSpec) Requests(b *Build) float64 {
	var n float64
	for _, tn := range *t {
		n += float64(tn.Users) * tn.RatePerUser * seconds(b, tn.Start, tn.End)
	}
	return n
}

// Requests is every campaign's rate times the span (the legit users' retries of a
// mistyped password on top).
func (l *LoginAttackSpec) Requests(b *Build) float64 {
	var rate float64
	if g := l.Legit; g != nil {
		rate += g.Rate * (1 + *g.Mistype)
	}
	for _, st := range []*StuffingSpec{l.Stuffing, l.SpreadStuffing} {
		if st != nil {
			rate += st.Rate
		}
	}
	if bf := l.BruteForce; bf != nil {
		rate += bf.Rate
	}
	return rate * seconds(b, l.Start, l.End)
}

// Requests is every user's page views over the span, each its fan-out and its
// interactions' requests, a view taking the think time and the interactions' gaps.
func (p *PageLoadSpec) Requests(b *Build) float64 {
	perView := float64(p.Fanout + *p.Interactions*p.InteractionSize)
	cycle := time.Duration(p.Think) + time.Duration(*p.Interactions)*time.Duration(p.InteractionGap)
	if cycle <= 0 {
		return 0
	}
	return float64(p.Users) * perView * seconds(b, p.Start, p.End) / cycle.Seconds()
}
