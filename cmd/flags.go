package cmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/sim"
)

// globalOptions are the options several commands share: output format and folder, charts,
// seed and decisions file. They are not global flags: each command registers, with the
// add*Flag methods below, the flags of the options its run function reads, so a flag a
// command would ignore is an unknown flag there (exit 2) instead of a silent no-op.
type globalOptions struct {
	format    string
	out       string
	charts    string
	seed      uint64
	seedSet   bool
	decisions string
}

// allFormats are the values of --format for a command that renders its results as a
// table, JSON, CSV and Markdown.
var allFormats = []string{"table", "json", "csv", "markdown"}

// addFormatFlag registers --format on c, taking the formats given (default: the first).
func (g *globalOptions) addFormatFlag(c *cobra.Command, formats ...string) {
	g.format = formats[0]
	c.Flags().Var(&choiceValue{dst: &g.format, what: "format", choices: formats}, "format",
		"output format: "+orList(formats))
}

// addOutFlags registers --out and --charts on c, for a command that writes result files
// or charts into a folder.
func (g *globalOptions) addOutFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&g.out, "out", "out", `folder for result files and charts ("" writes none)`)
	f.StringVar(&g.charts, "charts", "svg", "chart formats to write under --out: svg, png, png,svg or none")
}

// addSeedFlag registers --seed on c; g.seedSet then says whether the command line gave one.
func (g *globalOptions) addSeedFlag(c *cobra.Command) {
	c.Flags().Var(&seedValue{g}, "seed", "seed of the run's random source (default: the scenario's, else 1)")
}

// addDecisionsFlag registers --decisions on c, for a command that streams one row per
// request and algorithm.
func (g *globalOptions) addDecisionsFlag(c *cobra.Command) {
	c.Flags().StringVar(&g.decisions, "decisions", "", "write one CSV row per request and algorithm to this file")
}

// choiceValue is a string flag that takes one of a fixed set of values; anything else is
// refused while the command line is parsed, before the command runs.
type choiceValue struct {
	dst     *string
	what    string // "format": the noun of the error message
	choices []string
}

func (v *choiceValue) String() string { return *v.dst }
func (v *choiceValue) Type() string   { return "string" }

func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("unknown %s %q (want %s)", v.what, s, orList(v.choices))
	}
	*v.dst = s
	return nil
}

// seedValue is --seed: a uint64 that remembers it was set, since 0 is a seed like any other.
type seedValue struct{ g *globalOptions }

func (v seedValue) String() string { return strconv.FormatUint(v.g.seed, 10) }
func (v seedValue) Type() string   { return "uint64" }

func (v seedValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return fmt.Errorf("want a whole number from 0 to %d", uint64(1<<64-1))
	}
	v.g.seed, v.g.seedSet = n, true
	return nil
}

// unitsValue is a flag of a whole number of units (a limit, a burst) from 1 to
// algorithms.MaxUnits. A
// flag the command line gives is checked while it is parsed, so an explicit 0 is refused
// (exit 2) instead of being read as the default that 0 stands for when it is left out.
type unitsValue struct{ dst *int64 }

func (v unitsValue) String() string { return strconv.FormatInt(*v.dst, 10) }
func (v unitsValue) Type() string   { return "int" }

func (v unitsValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil || n > algorithms.MaxUnits {
		return fmt.Errorf("want a whole number from 1 to %d (2^52)", int64(algorithms.MaxUnits))
	}
	if n < 1 {
		return fmt.Errorf("must be at least 1, got %d", n)
	}
	*v.dst = n
	return nil
}

// windowValue is a flag of a window: a duration the virtual clock handles (positive, at
// most sim.MaxWindow), checked while it is parsed, so an explicit 0s is refused too.
type windowValue struct{ dst *time.Duration }

// String is the window, or "" when unset, so that help prints no "(default 0s)".
func (v windowValue) String() string {
	if *v.dst == 0 {
		return ""
	}
	return v.dst.String()
}
func (v windowValue) Type() string { return "duration" }

func (v windowValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 1m or 1.5s")
	}
	if err := sim.CheckWindow(d); err != nil {
		return err
	}
	*v.dst = d
	return nil
}

// orList writes "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// argCount checks a command's positional arguments: at least min, at most max (max < 0: no
// limit). The error names the command and the arguments its Use line asks for, and is a
// usage error (exit 2).
func argCount(min, max int) cobra.PositionalArgs {
	return func(c *cobra.Command, got []string) error {
		if len(got) >= min && (max < 0 || len(got) <= max) {
			return nil
		}
		if max == 0 {
			if c.HasSubCommands() {
				return cmdlineErrorf(c, "unknown command %q for %q", got[0], c.CommandPath())
			}
			return cmdlineErrorf(c, "%q takes no arguments, got %s", c.CommandPath(), quoteAll(got))
		}
		// The Use line after the name, up to the first flag ("sweep --scenario ...").
		want := " " + strings.TrimSpace(strings.TrimPrefix(c.Use, c.Name()))
		if i := strings.Index(want, " -"); i >= 0 {
			want = want[:i]
		}
		want = strings.TrimSpace(want)
		if len(got) == 0 {
			return cmdlineErrorf(c, "%q needs %s", c.CommandPath(), want)
		}
		return cmdlineErrorf(c, "%q takes %s, got %d arguments: %s", c.CommandPath(), want, len(got), quoteAll(got))
	}
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, " ")
}
