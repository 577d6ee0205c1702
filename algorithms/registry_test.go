package algorithms

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestEveryKindKeepsTheContract holds every registered kind to what the rest of the
// program asks of it: a plain name that parses to itself, a limiter named by its spec, a
// unique rank, the six as the defaults in report order, and a bound for every default.
func TestEveryKindKeepsTheContract(t *testing.T) {
	p := Policy{Limit: 10, Window: time.Second, Burst: 5}
	ranks := map[int]string{}
	for _, k := range Kinds() {
		if prev, ok := ranks[k.Rank]; ok {
			t.Errorf("%s and %s share rank %d", prev, k.Name, k.Rank)
		}
		ranks[k.Rank] = k.Name
		if k.Summary == "" {
			t.Errorf("%s has no summary", k.Name)
		}
		if len(k.Params) > 0 {
			continue // a product's model is held to the contract by its own tests
		}
		s, err := Parse(k.Name)
		if err != nil || s.Text != k.Name || s.Kind != k {
			t.Fatalf("Parse(%q) = %+v, %v", k.Name, s, err)
		}
		lim, err := New(k.Name, p)
		if err != nil {
			t.Fatal(err)
		}
		if lim.Name() != k.Name {
			t.Errorf("%s builds a limiter named %q", k.Name, lim.Name())
		}
		if d := lim.Allow(0, 0, 1); !d.Allowed || lim.Keys() != 1 || lim.StateBytes() <= 0 {
			t.Errorf("%s: first request %+v, %d keys, %d bytes", k.Name, d, lim.Keys(), lim.StateBytes())
		}
		b, ok := s.Model.Bound(p, 0)
		if k.Default && (!ok || b.Value < float64(p.Limit) || b.Formula == "" || b.Source == "") {
			t.Errorf("%s: bound %+v, %v", k.Name, b, ok)
		}
		if k.Bucket && ok && b.Formula != "b + r·T" {
			t.Errorf("%s is a bucket with the bound %s", k.Name, b.Formula)
		}
		if k.Tag != "" && k.Script == "" || k.Script != "" && k.Tag == "" {
			t.Errorf("%s: script %q with tag %q", k.Name, k.Script, k.Tag)
		}
	}
	want := "fixed-window sliding-log sliding-window token-bucket leaky-bucket gcra"
	if got := strings.Join(Defaults(), " "); got != want {
		t.Errorf("defaults %s, want %s", got, want)
	}
	if got := strings.Join(Variants(), " "); got != "notes-sliding-window notes-token-bucket" {
		t.Errorf("variants %s", got)
	}
}

// TestBoundsOfTheSix pins each default's bound at a policy where the figures differ:
// L=10 per 1 s, b=5, over T = 2.5 s (⌈T/W⌉ = 3).
func TestBoundsOfTheSix(t *testing.T) {
	p := Policy{Limit: 10, Window: time.Second, Burst: 5}
	span := 2500 * time.Millisecond
	for name, want := range map[string]float64{
		FixedWindowName: 40, SlidingLogName: 30, SlidingWindowName: 35,
		TokenBucketName: 30, LeakyBucketName: 30, GCRAName: 30,
	} {
		b, ok := BoundOf(name, p, span)
		if !ok || b.Value != want {
			t.Errorf("%s over %s: %v (%v), want %v", name, span, b.Value, ok, want)
		}
	}
	// Over the window itself.
	if b, _ := BoundOf(FixedWindowName, p, 0); b.Value != 20 {
		t.Errorf("fixed window over W: %v, want 2L = 20", b.Value)
	}
	if _, ok := BoundOf(NotesSlidingWindowName, p, 0); ok {
		t.Error("the notes' script has no analytic bound")
	}
}

// registerToy adds, for one test, two products' models for the spec tests: "toy:rate=N
// burst=N strict", and "stack:" with the same parameters, which takes several sets of
// them joined by "+" (and refuses more than three).
func registerToy(tb testing.TB) {
	params := []Param{{Name: "rate", Doc: "r/s"}, {Name: "burst", Doc: "units"}, {Name: "strict", Flag: true, Doc: "a flag"}}
	configure := func(args Args) (Model, error) {
		if v, ok := args["rate"]; ok && v == "0" {
			return nil, errBadToy
		}
		return policyModel{build: func(p Policy) Limiter { return NewGCRA(p) }}, nil
	}
	Register(Kind{Name: "toy", Rank: 9998, Summary: "a test product", Params: params, Configure: configure})
	Register(Kind{
		Name: "stack", Rank: 9999, Summary: "a test product of several limits", Params: params, Configure: configure,
		Stack: func(models []Model) (Model, error) {
			if len(models) > 3 {
				return nil, errors.New("at most three limits")
			}
			return models[0], nil
		},
	})
	tb.Cleanup(func() {
		delete(kinds, "toy")
		delete(kinds, "stack")
		ranked = ranked[:len(ranked)-2]
	})
}

var errBadToy = &toyError{}

type toyError struct{}

func (*toyError) Error() string { return "rate must be positive" }

func TestParseSpecs(t *testing.T) {
	registerToy(t)
	for _, c := range []struct{ in, text, err string }{
		{"gcra", "gcra", ""},
		{"  gcra ", "gcra", ""},
		{"toy:burst=20 rate=10", "toy:rate=10 burst=20", ""},
		{"toy:strict   rate=10", "toy:rate=10 strict", ""},
		{"toy", "toy", ""},
		{"nosuch", "", `unknown algorithm "nosuch"`},
		{"gcra:burst=2", "", "gcra takes no parameters"},
		{"toy:", "", "toy: no parameters after the colon (want rate, burst, strict)"},
		{"toy:brust=2", "", `toy: unknown parameter "brust" (want rate, burst, strict)`},
		{"toy:rate=1 rate=2", "", "toy: parameter rate given twice"},
		{"toy:strict=yes", "", `toy: strict is a flag and takes no value, got "strict=yes"`},
		{"toy:rate", "", "toy: rate needs a value (rate=…)"},
		{"toy:rate=", "", "toy: rate needs a value (rate=…)"},
		{"toy:rate=0", "", "toy: rate must be positive"},
		{"toy:rate=1 + rate=2", "", "toy: takes one set of parameters, not several joined by +"},
		{"stack:rate=1", "stack:rate=1", ""},
		{"stack:burst=2 rate=1 +strict  rate=3", "stack:rate=1 burst=2 + rate=3 strict", ""},
		{"stack:rate=1+rate=2+rate=3", "stack:rate=1 + rate=2 + rate=3", ""},
		{"stack:rate=1 + rate=2 + rate=3 + rate=4", "", "stack: at most three limits"},
		{"stack:rate=1 +", "", "stack: set 2 of the parameters joined by + is empty (want rate, burst, strict)"},
		{"stack:+ rate=1", "", "stack: set 1 of the parameters joined by + is empty"},
		{"stack:rate=1 + rate=0", "", "stack: set 2 (rate=0): rate must be positive"},
		{"stack:rate=1 + rate=2 rate=3", "", "stack: parameter rate given twice"},
		{"stack:rate=1 + brust=2", "", `stack: unknown parameter "brust"`},
	} {
		s, err := Parse(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case c.err == "" && s.Text != c.text:
			t.Errorf("Parse(%q) = %q, want %q", c.in, s.Text, c.text)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Parse(%q) = %v, want an error with %q", c.in, err, c.err)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	registerToy(f)
	for _, s := range []string{"gcra", "toy:rate=10 burst=20 strict", "toy:=", "toy:rate==1", ":", "toy::",
		"stack:rate=1 + burst=2", "stack:++", "toy:+", "stack:rate=1+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		// A canonical spec parses to itself.
		again, err := Parse(s.Text)
		if err != nil || again.Text != s.Text {
			t.Fatalf("%q → %q → %q, %v", in, s.Text, again.Text, err)
		}
	})
}
