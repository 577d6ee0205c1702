// Package cmd holds rlsim's command line. Each command is an options struct, a constructor
// that builds the cobra command and only fills the options, and a run function that holds
// the behaviour and writes only to the streams it is given.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// IO is everything from outside the process a command touches, so tests can use buffers.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// globalOptions are the flags every command shares.
type globalOptions struct {
	format    string
	out       string
	charts    string
	seed      uint64
	seedSet   bool
	decisions string
}

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Execute runs rlsim with the process's arguments and streams and returns its exit status.
func Execute() int {
	return Main(os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// Main runs rlsim with args and returns the exit status: 0 on success, 1 when the run
// failed, 2 for a bad command line, or the status an error names (128 + a signal's number
// for a run a signal stopped).
func Main(args []string, streams IO) int {
	root := NewRoot(streams)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(streams.Err, "rlsim: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return 1
}

// NewRoot builds the command tree.
func NewRoot(streams IO) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "rlsim",
		Short: "Simulate rate limiters against real traffic shapes, in virtual time",
		Long: `rlsim replays scripted, generated or recorded traffic against every rate-limit
algorithm, keying policy and deployment layout in virtual time, and reports how much got
through that should not have, who was refused that should not have been, and what each
choice costs.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			g.seedSet = c.Flags().Changed("seed")
			switch g.format {
			case "table", "json", "csv", "markdown":
			default:
				return usagef("--format: unknown format %q (want table, json, csv or markdown)", g.format)
			}
			return nil
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.format, "format", "table", "output format: table, json, csv or markdown")
	pf.StringVar(&g.out, "out", "out", `folder for result files and charts ("" writes none)`)
	pf.StringVar(&g.charts, "charts", "svg", "chart formats to write under --out: svg, png, png,svg or none")
	pf.Uint64Var(&g.seed, "seed", 0, "seed of the run's random source (default: the scenario's, else 1)")
	pf.StringVar(&g.decisions, "decisions", "", "write one CSV row per request and algorithm to this file")

	root.AddCommand(newCompareCmd(g, streams), newRunCmd(g, streams), newScenariosCmd(g, streams))
	root.AddCommand(newBackoffCmd(g, streams), newHeadersCmd(g, streams), newServeCmd(g, streams), newProbeCmd(g, streams))
	root.AddCommand(newReplayCmd(g, streams))
	root.AddCommand(newWorstCaseCmd(g, streams))
	root.AddCommand(newClaimsCmd(g, streams))
	root.AddCommand(newMemoryCmd(g, streams))
	root.AddCommand(newSweepCmd(g, streams), newMergeCmd(g, streams))
	return root
}
