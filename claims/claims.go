// Package claims checks the statements of the design notes rlsim grew from (DESIGN.md's
// seed article), one by one, against what rlsim measures, and says for each whether it
// holds — and when.
//
// Each claim is a Check: an ID, the claim in one sentence, the notes' section it comes
// from, and a measure function that runs rlsim commands and returns a typed Measurement.
// The verdict is never typed in: the Measurement's Judge method maps the figures to a
// verdict and a regime by rules stated next to it, with named thresholds, so a change in
// the model that moves a figure across a threshold changes the verdict.
//
// Every measurement is taken by running an rlsim command line through the Runner the
// caller supplies (the command itself, in-process), so the command a claim cites is the
// command that measured it; the figures the claim quotes are declared with it, and a test
// runs each command and finds them in its output.
package claims

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Verdict is what the measurements say about a claim: one of the five values below.
type Verdict string

// The verdicts, as printed.
const (
	// Holds: the measurements agree with the claim as the notes state it.
	Holds Verdict = "holds"
	// HoldsWithCaveat: the claim holds, but a measured figure qualifies it (the regime says
	// how).
	HoldsWithCaveat Verdict = "holds with a caveat"
	// Depends: the claim holds in one measured regime and fails in another; the regime
	// names both sides.
	Depends Verdict = "depends"
	// DoesNotHold: the measurements contradict the claim.
	DoesNotHold Verdict = "does not hold"
	// NotCheckable: nothing rlsim can run decides the claim; the regime says why.
	NotCheckable Verdict = "not checkable"
)

// Verdicts lists the vocabulary in the order above.
var Verdicts = []Verdict{Holds, HoldsWithCaveat, Depends, DoesNotHold, NotCheckable}

// Judgement is a verdict and the regime it applies to: where the claim holds and where it
// fails for Depends, the caveat for HoldsWithCaveat, why for NotCheckable; it may be empty
// for the others.
type Judgement struct {
	Verdict Verdict
	Regime  string
}

// Measurement is what one claim's commands measured, typed, with the rule that judges it.
type Measurement interface {
	// Judge applies the claim's stated rule to the figures.
	Judge() Judgement
	// Text says what was measured, with its figures, in one paragraph.
	Text() string
}

// Check is one claim of the notes and how to measure it.
type Check struct {
	// ID is short, stable and kebab-case: `rlsim claims --claim ID` runs this one.
	ID string
	// Claim is the claim in one sentence, in rlsim's words.
	Claim string
	// Section is the notes' section it comes from, in English.
	Section string
	// measure runs the commands and returns the measurement; the session records the
	// commands it ran and the figures the measurement cites.
	measure func(*session) (Measurement, error)
}

// Result is one row of `rlsim claims`. The JSON names are part of the command contract.
type Result struct {
	ID       string  `json:"id"`
	Claim    string  `json:"claim"`
	Section  string  `json:"section"`
	Measured string  `json:"measured"`
	Verdict  Verdict `json:"verdict"`
	Regime   string  `json:"regime"`
	Command  string  `json:"command"`
	// Evidence is each command the claim ran, with the figures it cites from that
	// command's printed output.
	Evidence []Evidence `json:"-"`

	measurement Measurement
}

// Evidence is one command a claim ran and the figures it takes from it.
type Evidence struct {
	// Args is the command line after "rlsim", as a user would type it. "decisions.csv"
	// after --decisions is a file in the working folder; "URL" after --redis stands for
	// the server the claims were given.
	Args []string
	// Figures are what the command prints in its default (table) output: each is a list
	// of strings found in this order on one line.
	Figures [][]string
}

// String is the command as a user would type it.
func (e Evidence) String() string {
	quoted := make([]string, len(e.Args))
	for i, a := range e.Args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t'\"") {
			quoted[i] = "'" + a + "'"
		}
	}
	return "rlsim " + strings.Join(quoted, " ")
}

// cite records a figure of this command's output: cells found in order on one line.
func (e *Evidence) cite(cells ...string) { e.Figures = append(e.Figures, cells) }

// Runner runs rlsim with args (no program name) in-process, writing no result files, and
// returns what it printed on standard output, or an error carrying what it printed on
// standard error.
type Runner func(args []string) ([]byte, error)

// Config is what the claims need from outside the package.
type Config struct {
	// Run runs an rlsim command line; every measurement goes through it.
	Run Runner
	// RedisURL, when set, is a Redis server the memory claims measure on (their commands
	// then carry --redis); when empty they use the store's model calibrated on Redis 7,
	// and say so.
	RedisURL string
	// StoreTimeout, when not zero, is the round-trip timeout of the commands that talk to
	// RedisURL (their --store-timeout).
	StoreTimeout time.Duration
}

// MemoryPrefix is where the memory claims write on a real server (rlsim memory --prefix):
// the command refuses a prefix that already holds keys and deletes what it wrote.
const MemoryPrefix = "rlsim-claims:"

// Run measures and judges every check in order. A check whose commands fail is an error
// (a claim that does not hold is not): the reproduction itself is broken.
func Run(checks []Check, cfg Config) ([]Result, error) {
	if cfg.Run == nil {
		return nil, fmt.Errorf("claims: no runner")
	}
	s := newSession(cfg)
	defer s.close()
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		s.evidence = nil
		m, err := c.measure(s)
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", c.ID, err)
		}
		j := m.Judge()
		r := Result{ID: c.ID, Claim: c.Claim, Section: c.Section, Measured: m.Text(), Verdict: j.Verdict, Regime: j.Regime, measurement: m}
		var commands []string
		for _, e := range s.evidence {
			commands = append(commands, e.String())
			r.Evidence = append(r.Evidence, *e)
		}
		r.Command = strings.Join(commands, "; ")
		out = append(out, r)
	}
	return out, nil
}

// Select returns the checks with the given IDs, in the order given; an unknown ID is an
// error that lists the valid ones.
func Select(checks []Check, ids []string) ([]Check, error) {
	var out []Check
	for _, id := range ids {
		i := slices.IndexFunc(checks, func(c Check) bool { return c.ID == id })
		if i < 0 {
			return nil, fmt.Errorf("unknown claim %q (want one of %s)", id, strings.Join(IDs(checks), ", "))
		}
		out = append(out, checks[i])
	}
	return out, nil
}

// IDs lists the checks' IDs in order.
func IDs(checks []Check) []string {
	ids := make([]string, len(checks))
	for i, c := range checks {
		ids[i] = c.ID
	}
	return ids
}
