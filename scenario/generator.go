package scenario

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// Generator is one traffic section of a scenario file, decoded into its generator's own
// spec type. Each generator is one file of this package (gen_*.go, or a test's own file)
// that declares the spec type, implements these methods on a pointer to it, and
// registers itself from init with Register; nothing else names it.
type Generator interface {
	// Defaults fills in what the file left out. Parse calls it once, after decoding and
	// before Validate; nothing else applies the generator's defaults.
	Defaults()
	// Validate reports the first thing wrong with the section through c, which places
	// it in the file. It changes nothing.
	Validate(c *Check) error
	// Last is the latest time the section names on a timeline whose t=0 is epoch: its
	// end, or its last scripted arrival; zero when it runs to the scenario's end.
	// Horizon reads it.
	Last(epoch time.Time) time.Duration
	// Sources builds the section's traffic for one run.
	Sources(b *Build) []traffic.Source
}

// GeneratorKind is a kind of traffic section, as Register records it.
type GeneratorKind struct {
	// Section is the YAML key of the section ("poisson").
	Section string
	// New returns an empty spec to decode a section into.
	New func() Generator
	// Plain says every request the generator sends carries only a key name, a cost and
	// a label — no identities, no addresses — so a scenario keyed on the name can take
	// the fast path of a run.
	Plain bool
}

var generators = map[string]GeneratorKind{}

// Register makes a traffic section known to Parse. Generators call it from init; a
// second kind with the same section name is a programming mistake and panics.
func Register(k GeneratorKind) {
	if k.Section == "" || k.New == nil {
		panic("scenario: Register needs a section name and a New function")
	}
	if _, dup := generators[k.Section]; dup {
		panic("scenario: generator " + k.Section + " registered twice")
	}
	generators[k.Section] = k
}

// Sections lists the registered traffic sections, sorted.
func Sections() []string {
	names := make([]string, 0, len(generators))
	for n := range generators {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// sectionList is Sections as a sentence: "a, b or c".
func sectionList() string {
	names := Sections()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// TrafficSpec is one entry of the traffic list: exactly one generator's section.
type TrafficSpec struct {
	// Section is the generator's YAML key ("poisson").
	Section string
	// Spec is the section, decoded into the generator's own type (*PoissonSpec, ...).
	Spec Generator

	found int // how many sections the entry held; Validate refuses any count but one
}

// Plain reports whether the entry's generator sends plain requests (GeneratorKind.Plain).
func (t TrafficSpec) Plain() bool { return generators[t.Section].Plain }

// Check is what a generator's Validate is given: the scenario around the section and a
// way to report a problem at its place in the file.
type Check struct {
	// Epoch is the scenario's t=0 on the wall clock; Duration its duration, zero when it
	// sets none.
	Epoch    time.Time
	Duration time.Duration

	sc    *Scenario
	file  string
	field string // the section's path ("traffic[0].poisson")
}

// path is the full path of field inside the section.
func (c *Check) path(field string) string {
	switch {
	case field == "":
		return c.field
	case field[0] == '[':
		return c.field + field
	}
	return c.field + "." + field
}

// Fail is the error for field, a path inside the section ("rate", "routes[0].cost", "[2]"
// for an item of a section that is a list, "" for the section itself): it names the file,
// the line and column, and the field's full path.
func (c *Check) Fail(field, format string, args ...any) error {
	return c.sc.fail(c.file, c.path(field), format, args...)
}

// Set reports whether the file writes field (a path inside the section).
func (c *Check) Set(field string) bool {
	return c.sc.positions.at(c.path(field)) != nil
}

// maxActors bounds generator sizes so that a typo cannot ask for a billion users.
const maxActors = 1 << 22

// Count checks a number of users, accounts or tries: from 1 to 4194304.
func (c *Check) Count(field string, v int) error {
	if v <= 0 || v > maxActors {
		return c.Fail(field, "must be between 1 and %d, got %d", maxActors, v)
	}
	return nil
}

// Rate checks a rate in requests per second: positive, at most 1e7.
func (c *Check) Rate(field string, v float64) error {
	if !(v > 0) || v > 1e7 {
		return c.Fail(field, "must be a positive number of requests per second (at most 1e7), got %g", v)
	}
	return nil
}

// maxTotalRate bounds a crowd's total request rate (users × rate per user) per second, so
// that a typo cannot ask for a run that never ends.
const maxTotalRate = 1e6

// CrowdRate checks that users at perUser each stay within 1e6 requests per second; the
// error names field.
func (c *Check) CrowdRate(field string, users int, perUser float64) error {
	if total := float64(users) * perUser; total > maxTotalRate {
		return c.Fail(field, "users × rate_per_user is %g requests per second, more than %g", total, float64(maxTotalRate))
	}
	return nil
}

// Span checks a section's start and end (fields prefix+"start" and prefix+"end"): the
// start not before the scenario's, the end after the start, and an end given when the
// scenario sets no duration.
func (c *Check) Span(prefix string, start, end Offset) error {
	st := start.Resolve(c.Epoch)
	if st < 0 {
		return c.Fail(prefix+"start", "is before the scenario's start")
	}
	if !end.Set && c.Duration == 0 {
		return c.Fail(prefix+"end", "is required when the scenario sets no duration")
	}
	if end.Set && end.Resolve(c.Epoch) <= st {
		return c.Fail(prefix+"end", "must be after start")
	}
	return nil
}

// Cost checks a request's cost: 1 to traffic.MaxCost.
func (c *Check) Cost(field string, v int64) error {
	if v < 1 {
		return c.Fail(field, "must be at least 1, got %d", v)
	}
	if v > traffic.MaxCost {
		return c.Fail(field, "must be at most %d (2^32), got %d", int64(traffic.MaxCost), v)
	}
	return nil
}

// Label checks a label field (legit or attacker).
func (c *Check) Label(field, label string) error {
	if _, err := traffic.ParseClass(label); err != nil {
		return c.Fail(field, "%v", err)
	}
	return nil
}

// Pool checks an address pool whose fields sit under prefix ("" or "legit.").
func (c *Check) Pool(prefix string, p PoolSpec) error {
	if p.IPs < 0 || p.IPs > 1<<20 {
		return c.Fail(prefix+"ips", "must be between 1 and %d, got %d", 1<<20, p.IPs)
	}
	bits := 32
	if a := p.IPBase.Addr(); a.IsValid() && a.Is6() {
		bits = 128
	}
	if p.IPSpacing < 0 || p.IPSpacing > bits {
		return c.Fail(prefix+"ip_spacing", "must be a prefix length from 1 to %d, got %d", bits, p.IPSpacing)
	}
	return nil
}

// Build is what a generator's Sources is given for one run.
type Build struct {
	// Epoch is the scenario's t=0 on the wall clock; Horizon the time the run stops.
	Epoch   time.Time
	Horizon time.Duration
	// Entry is the section's place in the traffic list, from 1, so that ids two entries
	// make never collide.
	Entry int
	// RNG is the run's random source; generators draw from it in list order.
	RNG *rand.Rand
}

// At is an offset on the run's timeline.
func (b *Build) At(o Offset) time.Duration { return o.Resolve(b.Epoch) }

// Span is a section's start and end on the run's timeline; an end the file leaves out is
// the horizon.
func (b *Build) Span(start, end Offset) (time.Duration, time.Duration) {
	e := b.Horizon
	if end.Set {
		e = end.Resolve(b.Epoch)
	}
	return start.Resolve(b.Epoch), e
}

// Sources builds the traffic of one run: the recorded traffic, then every section of the
// traffic list in order, drawing from rng.
func (s *Scenario) Sources(rng *rand.Rand) []traffic.Source {
	b := &Build{Epoch: s.EpochTime(), Horizon: s.Horizon(), RNG: rng}
	var out []traffic.Source
	for i, t := range s.Traffic {
		b.Entry = i + 1
		out = append(out, t.Spec.Sources(b)...)
	}
	return out
}

// validateTraffic checks every entry of the traffic list: one registered section each,
// valid by its generator's rules, and the units they send with the clients' within
// MaxRunUnits.
func (s *Scenario) validateTraffic(file string, epoch time.Time) error {
	total := s.ClientRequests()
	b := &Build{Epoch: epoch, Horizon: s.Horizon()}
	for i, t := range s.Traffic {
		field := fmt.Sprintf("traffic[%d]", i)
		if t.found != 1 {
			return s.fail(file, field, "each traffic entry holds exactly one generator (%s), found %d", sectionList(), t.found)
		}
		c := &Check{Epoch: epoch, Duration: time.Duration(s.Duration), sc: s, file: file, field: field + "." + t.Section}
		if err := t.Spec.Validate(c); err != nil {
			return err
		}
		if total += units(t.Spec, b); total > MaxRunUnits {
			return s.fail(file, c.field, "with this section the run sends about %.3g units (requests × cost), more than the %.3g (2^62) a run counts", total, float64(MaxRunUnits))
		}
	}
	return nil
}
