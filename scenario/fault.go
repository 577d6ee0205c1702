package scenario

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/rlsim/rlsim/cluster"
)

// Fault is one entry of the faults list, decoded into its fault's own spec type. Each
// fault is one file of this package (fault_*.go) that declares the spec type, implements
// these methods on a pointer to it, and registers itself from init with RegisterFault;
// nothing else names it.
type Fault interface {
	// Defaults fills in what the file left out. Parse calls it once, after decoding and
	// before Validate.
	Defaults()
	// Validate reports the first thing wrong with the entry through c, which places it
	// in the file (c.Fail("at", ...) is faults[i].NAME.at). It changes nothing.
	Validate(c *Check) error
	// Apply puts the fault into the fleet configuration of the cluster section, whose
	// offsets count from epoch; the variants start from what it leaves.
	Apply(cfg *cluster.Config, epoch time.Time)
}

// FaultKind is a kind of fault, as RegisterFault records it.
type FaultKind struct {
	// Name is the fault's YAML key ("outage").
	Name string
	// Rank orders the faults in every list and message, lowest first; ranks are unique.
	Rank int
	// New returns an empty spec to decode an entry into.
	New func() Fault
}

var faultKinds = map[string]FaultKind{}

// RegisterFault makes a fault known to Parse. Faults call it from init; a second kind
// with the same name or rank is a programming mistake and panics.
func RegisterFault(k FaultKind) {
	if k.Name == "" || k.New == nil {
		panic("scenario: RegisterFault needs a name and a New function")
	}
	for _, o := range faultKinds {
		if o.Name == k.Name || o.Rank == k.Rank {
			panic("scenario: fault " + k.Name + " registered twice, or on " + o.Name + "'s rank")
		}
	}
	faultKinds[k.Name] = k
}

// FaultNames lists the registered faults, by rank.
func FaultNames() []string {
	kinds := make([]FaultKind, 0, len(faultKinds))
	for _, k := range faultKinds {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b FaultKind) int { return cmp.Compare(a.Rank, b.Rank) })
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return names
}

// FaultSpec is one entry of the faults list: exactly one fault.
type FaultSpec struct {
	// Kind is the fault's YAML key ("outage").
	Kind string
	// Spec is the entry, decoded into the fault's own type (*OutageSpec, ...).
	Spec Fault

	found int // how many faults the entry held; validation refuses any count but one
}

var faultSpecType = reflect.TypeFor[FaultSpec]()

// walkFault decodes a faults entry: each key is a registered fault, decoded into its own
// spec. Validation refuses an entry that does not hold exactly one.
func (w *walker) walkFault(n ast.Node, f *FaultSpec, path string) error {
	return w.walkPairs(n, path, FaultNames(), func(key string) (reflect.Value, bool) {
		kind, ok := faultKinds[key]
		if !ok {
			return reflect.Value{}, false
		}
		spec := kind.New()
		if f.found++; f.found == 1 {
			f.Kind, f.Spec = key, spec
		}
		return reflect.ValueOf(spec).Elem(), true
	})
}

// span is a fault that cuts nodes off over [at, at+for): such faults (outages,
// partitions) must come in time order and not overlap, which order says otherwise.
type span interface {
	span(epoch time.Time) (at, dur time.Duration)
	order() string
}

// HasFault reports whether the scenario has a fault whose spec is a T.
func HasFault[T Fault](s *Scenario) bool {
	return slices.ContainsFunc(s.Faults, func(f FaultSpec) bool { _, ok := f.Spec.(T); return ok })
}

// validateFaults checks every entry of the faults list: one registered fault each, valid
// by its own rules, and the spans in time order.
func (s *Scenario) validateFaults(file string) error {
	epoch := s.EpochTime()
	var lastEnd time.Duration
	for i, ft := range s.Faults {
		field := fmt.Sprintf("faults[%d]", i)
		if ft.found != 1 {
			return s.fail(file, field, "each fault entry holds exactly one fault (%s), found %d", faultList(), ft.found)
		}
		c := &Check{Epoch: epoch, Duration: time.Duration(s.Duration), sc: s, file: file, field: field + "." + ft.Kind}
		if err := ft.Spec.Validate(c); err != nil {
			return err
		}
		if sp, ok := ft.Spec.(span); ok {
			at, dur := sp.span(epoch)
			if at < lastEnd {
				return c.Fail("at", "%s", sp.order())
			}
			lastEnd = at + dur
		}
	}
	return nil
}

// faultList is FaultNames as a sentence: "a, b or c".
func faultList() string {
	names := FaultNames()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
