package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/claims"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

type claimsOptions struct {
	*globalOptions
	redisURL     string
	storeTimeout time.Duration
	ids          []string
	columns      []string
}

// claimsWidth is the terminal width the text output keeps to.
const claimsWidth = 100

func newClaimsCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &claimsOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "claims",
		Short: "Check every claim of the design notes and say whether, and when, it holds",
		Long: `claims runs, for each checkable statement of the design notes rlsim grew from, the rlsim
commands that measure it, and prints the claim, the notes' section, what was measured, a
verdict and the command that reproduces it. The verdict is one of: holds, holds with a
caveat, depends (the regime names where it holds and where it fails), does not hold, not
checkable (the regime says why). Each verdict follows from the measured figures by a rule
stated in the claims package; none is typed in. It reports; it exits 0 whatever the
verdicts.

--claim ID runs one claim (repeatable); --columns picks the fields that table, markdown and
csv print (JSON always carries all of them). The text output wraps to 100 columns.

The Redis memory claims use the store's model calibrated on Redis 7 unless --redis (or
the RLSIM_REDIS_URL environment variable) names a server: their commands then run rlsim
memory on it under the prefix "rlsim-claims:", which must be unused, and delete what they
wrote.`,
		Example: `  rlsim claims

  # one claim, as a Markdown table for a design document
  rlsim claims --claim fixed-window-200-in-200ms --format markdown

  # the verdicts only
  rlsim claims --columns id,verdict

  # as a Markdown table for a design document, the memory claims measured on a real Redis
  rlsim claims --format markdown --redis redis://127.0.0.1:6379/0`,
		Args: argCount(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			if !c.Flags().Changed("redis") {
				o.redisURL = os.Getenv("RLSIM_REDIS_URL")
				if _, err := store.ParseURL(o.redisURL); o.redisURL != "" && err != nil {
					return fmt.Errorf("RLSIM_REDIS_URL: %w", err)
				}
			}
			return runClaims(o, streams, claims.All())
		},
	}
	f := c.Flags()
	addRedisFlag(c, &o.redisURL, "measure the Redis memory claims on this server (default $RLSIM_REDIS_URL; unset: the calibrated model)")
	addStoreTimeoutFlag(c, &o.storeTimeout)
	f.StringArrayVar(&o.ids, "claim", nil, "run only the claim with this ID (repeatable)")
	f.StringSliceVar(&o.columns, "columns", nil, "fields to print, comma-separated: "+strings.Join(claims.Columns, ",")+" (default: all)")
	g.addFormatFlag(c, allFormats...)
	return c
}

func runClaims(o *claimsOptions, streams IO, checks []claims.Check) error {
	if len(o.ids) > 0 {
		var err error
		if checks, err = claims.Select(checks, o.ids); err != nil {
			return usagef("--claim: %v", err)
		}
	}
	columns := o.columns
	if len(columns) == 0 {
		columns = claims.Columns
	}
	for _, c := range columns {
		if !slices.Contains(claims.Columns, c) {
			return usagef("--columns: unknown field %q (want %s)", c, strings.Join(claims.Columns, ", "))
		}
	}
	results, err := claims.Run(checks, claims.Config{Run: inProcess, RedisURL: o.redisURL, StoreTimeout: o.storeTimeout})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := renderClaims(&buf, o.format, columns, results); err != nil {
		return err
	}
	_, err = streams.Out.Write(buf.Bytes())
	return err
}

// inProcess runs an rlsim command line in this process for the claims, with its output in
// memory.
func inProcess(args []string) ([]byte, error) { return RunQuiet(args) }

// RunQuiet runs an rlsim command line in-process and returns what it prints on stdout. It
// writes no result files: where the command takes --out and --charts it runs with --out ""
// and --charts none. A non-zero exit is an error carrying the command's message.
func RunQuiet(args []string) ([]byte, error) {
	var out, errOut bytes.Buffer
	streams := IO{In: strings.NewReader(""), Out: &out, Err: &errOut}
	if c, _, err := NewRoot(streams).Find(args); err == nil {
		if c.Flags().Lookup("out") != nil {
			args = append(slices.Clone(args), "--out", "")
		}
		if c.Flags().Lookup("charts") != nil {
			args = append(slices.Clone(args), "--charts", "none")
		}
	}
	if code := Main(args, streams); code != 0 {
		return nil, fmt.Errorf("exit %d: %s", code, strings.TrimSpace(strings.TrimPrefix(errOut.String(), "rlsim: ")))
	}
	return out.Bytes(), nil
}

func renderClaims(w io.Writer, format string, columns []string, results []claims.Result) error {
	return writeOutput(w, format, output{
		JSON: struct {
			Claims []claims.Result `json:"claims"`
		}{results},
		CSV: tableCSV(claims.Table(results, columns, false)),
		Human: func(w io.Writer, markdown bool) error {
			if !markdown {
				return claims.WriteText(w, results, columns, claimsWidth)
			}
			t := claims.Table(results, columns, true)
			t.Notes = []string{claims.Count(results)}
			return report.WriteMarkdown(w, t)
		},
	})
}
