package algorithms

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Kind is one algorithm, or one model of a real product's limiter, with everything the
// rest of the program asks of it. Each kind is one file of this package that registers
// itself (Register, from an init function); nothing outside that file names it.
//
// An algorithm of the textbook (token-bucket) is configured by the run's advertised
// policy alone and takes no parameters. A product's model (nginx) is configured in the
// product's own words, written as a spec:
//
//	PRODUCT:param=value param=value flag
//
// for example "nginx:rate=10r/s burst=20 nodelay". Either way it is judged against the
// run's policy, the promise "L per W".
type Kind struct {
	// Name is what --algorithms and scenario files call the kind: an algorithm's name
	// ("token-bucket"), or the product before a spec's colon ("nginx").
	Name string
	// Summary is one line for help and the catalogue.
	Summary string
	// Rank orders kinds in every report, lowest first: 10–99 the textbook algorithms,
	// 100–199 variants, 200 and up the products' models. Ranks are unique.
	Rank int
	// Default puts the kind in the list a command runs when none is named.
	Default bool
	// Params are the parameters a spec may give, in the order the canonical spec writes
	// them; empty for a kind configured by the policy alone.
	Params []Param
	// Configure builds the kind's model from a spec's parameters. args holds exactly the
	// parameters the spec gave, each checked against Params (a flag's value is "").
	Configure func(args Args) (Model, error)
	// Stack, when set, lets one spec give several sets of parameters separated by "+",
	// as a product applies several limits to one request (nginx's limit_req lines on one
	// location: "nginx:rate=10r/s burst=5 + rate=1r/s"). Each set is checked against
	// Params and configured by Configure on its own; Stack combines the models, in the
	// order the spec wrote them. The canonical spec writes each set canonically, joined
	// by " + ".
	Stack func(models []Model) (Model, error)
	// Bucket marks a burst-type kind, whose own promise is b + r·W rather than L.
	Bucket bool
	// Form is the shape of a key's state, as the distributed placements read it.
	Form StateForm
	// Script names the store script (store/lua/NAME.lua) that runs the algorithm
	// atomically on a shared store, and Tag the tag its keys carry; empty when the
	// kind has no shared form. The store sizes a kind's keys in Redis by its Form.
	Script, Tag string
	// Counters, when set, says which of the kind's specs have a shared form of window
	// counters in the store, every one of which must admit ("policy=redis"): their models
	// implement CountedModel, and SharedCounters gives their counters.
	Counters string
}

// Param is one parameter of a product's spec.
type Param struct {
	// Name is the parameter as the product's configuration writes it ("burst").
	Name string
	// Flag marks a parameter written bare ("nodelay"), never with a value.
	Flag bool
	// Doc says what it means, with its unit and default.
	Doc string
}

// StateForm is the shape of a key's state, which decides what a distributed placement can
// do with it without knowing the algorithm.
type StateForm uint8

const (
	// FormOther is a state no placement reads piecewise (a queue, a product's own).
	FormOther StateForm = iota
	// FormWindowCount is one counter per aligned window (the fixed window).
	FormWindowCount
	// FormTwoWindowCounts is the counters of the current and the previous window (the
	// two-counter sliding window).
	FormTwoWindowCounts
	// FormTimestamps is a set of admitted timestamps (the sliding log).
	FormTimestamps
	// FormBucket is a level and the time it was taken (the token bucket's hash).
	FormBucket
	// FormTAT is one theoretical arrival time (GCRA).
	FormTAT
)

// Model is a configured kind: what one spec names. It builds the limiter of a run and
// states the most one key can get through.
type Model interface {
	// New builds the limiter for a run whose promise is p (already valid). A kind
	// configured by the policy decides by p; a product's model decides by its own
	// parameters.
	New(p Policy) (Limiter, error)
	// Bound is the analytic ceiling on what the limiter admits for one key in any
	// trailing window of length span, under p; ok is false when none is known.
	Bound(p Policy, span time.Duration) (b Bound, ok bool)
}

// Bound is the analytic ceiling on what a limiter admits for one key inside any trailing
// window of length T, with where it comes from.
type Bound struct {
	// Value is the ceiling, in units of cost. Some are suprema a client approaches but
	// never reaches (Reached false): the integer maximum is then the largest whole number
	// below Value.
	Value float64 `json:"value"`
	// Formula is the bound in the policy's symbols: L units per W, burst b, r = L/W.
	Formula string `json:"formula"`
	// Source says where the bound comes from.
	Source string `json:"source"`
	// Reached reports whether a schedule may reach Value exactly; when false, no schedule
	// admits Value or more.
	Reached bool `json:"reached"`
}

// MaxAdmitted is the largest whole number of units the bound allows: Value rounded down,
// or one less than Value when Value is a whole number the algorithm cannot reach.
func (b Bound) MaxAdmitted() int64 {
	v := math.Floor(b.Value + 1e-9)
	if !b.Reached && math.Abs(v-b.Value) < 1e-9 {
		v--
	}
	return int64(v)
}

// Args are a spec's parameters by name; a flag's value is "".
type Args map[string]string

// Has reports whether the spec gave the parameter.
func (a Args) Has(name string) bool { _, ok := a[name]; return ok }

// Spec is a parsed spec: the kind, its model, and the canonical text every output
// names it by (the parameters in the kind's order).
type Spec struct {
	Kind  *Kind
	Model Model
	Text  string
}

var (
	kinds  = map[string]*Kind{}
	ranked []*Kind
)

// Register adds k to the catalogue. It panics on a kind without a name, model or unique
// rank: a mistake in this package, caught by every test.
func Register(k Kind) {
	switch {
	case k.Name == "" || strings.ContainsAny(k.Name, ": ,=") || k.Configure == nil:
		panic(fmt.Sprintf("algorithms: kind %q needs a plain name and Configure", k.Name))
	case kinds[k.Name] != nil:
		panic("algorithms: kind " + k.Name + " registered twice")
	}
	for _, o := range ranked {
		if o.Rank == k.Rank {
			panic(fmt.Sprintf("algorithms: kinds %s and %s share rank %d", o.Name, k.Name, k.Rank))
		}
	}
	kp := &k
	kinds[k.Name] = kp
	ranked = append(ranked, kp)
	slices.SortFunc(ranked, func(a, b *Kind) int { return a.Rank - b.Rank })
}

// Kinds lists every registered kind in report order.
func Kinds() []*Kind { return slices.Clone(ranked) }

// Defaults lists the names of the kinds a command runs when none is named, in report
// order.
func Defaults() []string { return Select(func(k *Kind) bool { return k.Default }) }

// Lookup returns the kind a spec names (the part before its colon), or nil.
func Lookup(spec string) *Kind {
	name, _, _ := strings.Cut(strings.TrimSpace(spec), ":")
	return kinds[name]
}

// Rank is the report position of the kind spec names; unknown specs sort last.
func Rank(spec string) int {
	if k := Lookup(spec); k != nil {
		return k.Rank
	}
	return 1 << 30
}

// ErrUnknown is wrapped by Parse for a spec naming no registered kind.
var ErrUnknown = errors.New("unknown algorithm")

// Parse reads a spec: a kind's name, optionally followed by a colon and the product's
// parameters separated by spaces ("nginx:rate=10r/s burst=20 nodelay"), or, for a kind
// that stacks (Kind.Stack), several sets of them separated by "+". Every problem — an
// unknown kind or parameter, a repeated one, a flag given a value, a value the model
// refuses — is one error naming the spec and the part at fault.
func Parse(spec string) (Spec, error) {
	text := strings.TrimSpace(spec)
	name, rest, hasParams := strings.Cut(text, ":")
	k := kinds[name]
	if k == nil {
		return Spec{}, fmt.Errorf("%w %q (want one of %s)", ErrUnknown, name, catalogue())
	}
	if hasParams && len(k.Params) == 0 {
		return Spec{}, fmt.Errorf("%s takes no parameters (its policy is --limit, --window and --burst), got %q", name, text)
	}
	sets := []string{rest}
	if k.Stack != nil {
		sets = strings.Split(rest, "+")
	} else if strings.Contains(rest, "+") {
		return Spec{}, fmt.Errorf("%s: takes one set of parameters, not several joined by +", name)
	}
	models := make([]Model, 0, len(sets))
	texts := make([]string, 0, len(sets))
	for i, set := range sets {
		args, err := parseArgs(k, set)
		if err != nil {
			return Spec{}, err
		}
		if hasParams && len(args) == 0 {
			if len(sets) > 1 {
				return Spec{}, fmt.Errorf("%s: set %d of the parameters joined by + is empty (want %s)", name, i+1, paramNames(k))
			}
			return Spec{}, fmt.Errorf("%s: no parameters after the colon (want %s)", name, paramNames(k))
		}
		m, err := k.Configure(args)
		if err != nil {
			if len(sets) > 1 {
				return Spec{}, fmt.Errorf("%s: set %d (%s): %w", name, i+1, strings.TrimSpace(set), err)
			}
			return Spec{}, fmt.Errorf("%s: %w", name, err)
		}
		models = append(models, m)
		texts = append(texts, paramsText(k, args))
	}
	m := models[0]
	if len(models) > 1 {
		var err error
		if m, err = k.Stack(models); err != nil {
			return Spec{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	text = name
	if texts[0] != "" {
		text += ":" + strings.Join(texts, " + ")
	}
	return Spec{Kind: k, Model: m, Text: text}, nil
}

// parseArgs reads one set of a spec's parameters, checked against k's Params.
func parseArgs(k *Kind, set string) (Args, error) {
	args := Args{}
	for _, tok := range strings.Fields(set) {
		key, val, valued := strings.Cut(tok, "=")
		i := slices.IndexFunc(k.Params, func(p Param) bool { return p.Name == key })
		switch {
		case i < 0:
			return nil, fmt.Errorf("%s: unknown parameter %q (want %s)", k.Name, key, paramNames(k))
		case args.Has(key):
			return nil, fmt.Errorf("%s: parameter %s given twice", k.Name, key)
		case k.Params[i].Flag && valued:
			return nil, fmt.Errorf("%s: %s is a flag and takes no value, got %q", k.Name, key, tok)
		case !k.Params[i].Flag && (!valued || val == ""):
			return nil, fmt.Errorf("%s: %s needs a value (%s=…)", k.Name, key, key)
		}
		args[key] = val
	}
	return args, nil
}

// Canonical returns spec in its canonical form, or spec itself when it does not parse.
func Canonical(spec string) string {
	s, err := Parse(spec)
	if err != nil {
		return spec
	}
	return s.Text
}

// Known reports whether spec parses.
func Known(spec string) bool {
	_, err := Parse(spec)
	return err == nil
}

// paramsText writes one set of parameters in k's order: "rate=10r/s burst=20 nodelay".
func paramsText(k *Kind, args Args) string {
	parts := make([]string, 0, len(args))
	for _, p := range k.Params {
		v, ok := args[p.Name]
		switch {
		case !ok:
		case p.Flag:
			parts = append(parts, p.Name)
		default:
			parts = append(parts, p.Name+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// specText is the canonical spec of the registered kind name configured by one set of
// parameters, for a product's limiter to name itself by.
func specText(name string, args Args) string {
	if t := paramsText(kinds[name], args); t != "" {
		return name + ":" + t
	}
	return name
}

func paramNames(k *Kind) string {
	names := make([]string, len(k.Params))
	for i, p := range k.Params {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// catalogue lists the kinds' names for an error message: the defaults first, then the
// rest.
func catalogue() string {
	var names []string
	for _, k := range ranked {
		n := k.Name
		if len(k.Params) > 0 {
			n += ":…"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// New builds the limiter spec names for policy p.
func New(spec string, p Policy) (Limiter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	return s.Model.New(p)
}

// BoundOf returns the analytic bound of what spec admits for one key in any window of
// length span under p; ok is false for an unknown spec or one with no known bound.
func BoundOf(spec string, p Policy, span time.Duration) (Bound, bool) {
	s, err := Parse(spec)
	if err != nil {
		return Bound{}, false
	}
	return s.Model.Bound(p, span)
}

// policyModel is the model of a kind configured by the run's policy alone.
type policyModel struct {
	build func(p Policy) Limiter
	bound func(p Policy, span time.Duration) Bound
}

func (m policyModel) New(p Policy) (Limiter, error) { return m.build(p), nil }

func (m policyModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	if m.bound == nil {
		return Bound{}, false
	}
	return m.bound(p, span), true
}

// byPolicy is the Configure of a kind configured by the policy alone.
func byPolicy(build func(Policy) Limiter, bound func(Policy, time.Duration) Bound) func(Args) (Model, error) {
	m := policyModel{build: build, bound: bound}
	return func(Args) (Model, error) { return m, nil }
}

// boundTerms are the symbols of a bound over windows of length span under p.
type boundTerms struct {
	limit, burst float64
	windows      float64 // ⌈T/W⌉
	span, window float64 // ns
	rate         float64 // units per ns
}

func termsOf(p Policy, span time.Duration) boundTerms {
	if span <= 0 {
		span = p.Window
	}
	w := float64(p.Window)
	return boundTerms{
		limit: float64(p.Limit), burst: float64(p.EffectiveBurst()),
		windows: float64((int64(span) + int64(p.Window) - 1) / int64(p.Window)),
		span:    float64(span), window: w, rate: float64(p.Limit) / w,
	}
}

// Select lists, in report order, the names of the kinds that keep holds for: how a
// package asks which algorithms it can run without naming any.
func Select(keep func(*Kind) bool) []string {
	var out []string
	for _, k := range ranked {
		if keep(k) {
			out = append(out, k.Name)
		}
	}
	return out
}

// FormOf is the form of the state of the kind spec names; FormOther for an unknown spec.
func FormOf(spec string) StateForm {
	if k := Lookup(spec); k != nil {
		return k.Form
	}
	return FormOther
}

// IsBucket reports whether spec names a burst-type kind (Kind.Bucket), whose own
// promise is b + r·W rather than L.
func IsBucket(spec string) bool {
	k := Lookup(spec)
	return k != nil && k.Bucket
}
