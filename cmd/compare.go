package cmd

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

type compareOptions struct {
	*globalOptions
	scenarios  []string
	algorithms []string
	limit      int64
	window     time.Duration
	burst      int64
	key        string
	memory     bool
	workers    int
}

func newCompareCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &compareOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "compare",
		Short: "Run every algorithm against the built-in scenarios (or the ones named)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runCompare(o, streams)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.scenarios, "scenario", nil, "scenario name or file (repeatable; default: every built-in)")
	f.StringSliceVar(&o.algorithms, "algorithms", nil, "algorithms to compare, comma-separated (default: the scenario's, else all)")
	f.Int64Var(&o.limit, "limit", 0, "override the policy's limit (units per window)")
	f.DurationVar(&o.window, "window", 0, "override the policy's window")
	f.Int64Var(&o.burst, "burst", 0, "override the bucket algorithms' burst")
	f.StringVar(&o.key, "key", "", "override what requests are keyed on")
	addScaleFlags(c, o)
	return c
}

func newRunCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &compareOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "run FILE|NAME",
		Short: "Run one scenario file or built-in scenario",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			o.scenarios = args
			return runCompare(o, streams)
		},
	}
	addScaleFlags(c, o)
	return c
}

func (o *compareOptions) validate() error {
	for _, a := range o.algorithms {
		if !slices.Contains(algorithms.Names, a) {
			return usagef("--algorithms: unknown algorithm %q (want %s)", a, strings.Join(algorithms.Names, ", "))
		}
	}
	if o.limit < 0 {
		return usagef("--limit: must be positive, got %d", o.limit)
	}
	if o.window < 0 {
		return usagef("--window: must be positive, got %s", o.window)
	}
	if o.burst < 0 {
		return usagef("--burst: must not be negative, got %d", o.burst)
	}
	if o.workers < 0 {
		return usagef("--workers: must not be negative, got %d", o.workers)
	}
	if o.key != "" && !slices.Contains(scenario.KeyKinds, o.key) {
		return usagef("--key: unknown key %q (want %s)", o.key, strings.Join(scenario.KeyKinds, ", "))
	}
	return nil
}

func runCompare(o *compareOptions, streams IO) error {
	if err := o.validate(); err != nil {
		return err
	}
	names := o.scenarios
	if len(names) == 0 {
		names = scenario.Builtins()
	}
	loaded := make([]*scenario.Scenario, 0, len(names))
	for _, n := range names {
		sc, err := scenario.Load(n)
		if err != nil {
			return err
		}
		if sc.Heavy && len(o.scenarios) == 0 {
			continue // the default suite stays quick; heavy scenarios run by name
		}
		if o.key != "" {
			sc.Key = o.key
		}
		loaded = append(loaded, sc)
	}
	defer tuneGCForHeavy(loaded)()
	opts := scenario.Options{Algorithms: o.algorithms, Limit: o.limit, Window: o.window, Burst: o.burst, Workers: o.workers}
	if o.seedSet {
		opts.Seed = &o.seed
	}

	var reports []*report.Report
	err := withDecisions(o.decisions, func(dw *scenario.DecisionWriter) error {
		opts.Decisions = dw
		for _, sc := range loaded {
			opts.Memory = o.memory || sc.Heavy
			rep, err := scenario.Run(sc, opts)
			if err != nil {
				return err
			}
			reports = append(reports, rep)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := renderReports(&buf, o.format, reports); err != nil {
		return err
	}
	_, err = streams.Out.Write(buf.Bytes())
	return err
}

// withDecisions runs fn with a decisions writer on a temporary file that becomes path only
// if fn succeeds; with no path, fn gets nil.
func withDecisions(path string, fn func(*scenario.DecisionWriter) error) error {
	if path == "" {
		return fn(nil)
	}
	return writeAtomically(path, func(w io.Writer) error {
		dw := scenario.NewDecisionWriter(csv.NewWriter(w))
		if err := fn(dw); err != nil {
			return err
		}
		if err := dw.Flush(); err != nil {
			return fmt.Errorf("--decisions %s: %w", path, err)
		}
		return nil
	})
}

func renderReports(w io.Writer, format string, reports []*report.Report) error {
	switch format {
	case "json":
		if len(reports) == 1 {
			return report.WriteJSON(w, reports[0])
		}
		return report.WriteJSON(w, reports)
	case "csv":
		return report.WriteCSV(w, reports)
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		t := report.ResultsTable(r)
		if r.Memory != nil {
			t.Notes = append(t.Notes, r.Memory.String())
		}
		var err error
		if format == "markdown" {
			err = report.WriteMarkdown(w, t)
		} else {
			err = report.WriteText(w, t)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
