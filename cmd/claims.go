package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/claims"
	"github.com/rlsim/rlsim/report"
)

type claimsOptions struct {
	*globalOptions
	redisURL string
}

func newClaimsCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &claimsOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "claims",
		Short: "Reproduce every quantitative claim of the design notes and say whether it holds",
		Long: `claims runs the reproduction of each figure in the design notes rlsim grew from and
prints the claim, what rlsim measured, a verdict (holds, holds with a caveat, does not
hold, or not yet measurable) and the command that reproduces it. It reports; it exits 0
even when a claim does not hold.

The Redis memory claims use the store's model calibrated on Redis 7 unless --redis (or
the RLSIM_REDIS_URL environment variable) names a server: then they load 1000 clients'
keys under "rlsim-claims:", read MEMORY USAGE, extrapolate, and delete what they wrote.`,
		Example: `  rlsim claims

  # as a Markdown table for a design document, the memory claims measured on a real Redis
  rlsim claims --format markdown --redis redis://127.0.0.1:6379/0`,
		Args: argCount(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			if !c.Flags().Changed("redis") {
				o.redisURL = os.Getenv("RLSIM_REDIS_URL")
			}
			return runClaims(o, streams, claims.AllWith(claims.Config{RedisURL: o.redisURL}))
		},
	}
	c.Flags().StringVar(&o.redisURL, "redis", "", "measure the Redis memory claims on this server (default $RLSIM_REDIS_URL; unset: the calibrated model)")
	g.addFormatFlag(c, allFormats...)
	return c
}

func runClaims(o *claimsOptions, streams IO, checks []claims.Check) error {
	results, err := claims.Run(checks)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := renderClaims(&buf, o.format, results); err != nil {
		return err
	}
	_, err = streams.Out.Write(buf.Bytes())
	return err
}

func renderClaims(w io.Writer, format string, results []claims.Result) error {
	t := claims.Table(results)
	switch format {
	case "json":
		return report.WriteJSON(w, struct {
			Claims []claims.Result `json:"claims"`
		}{results})
	case "csv":
		return report.WriteTableCSV(w, t)
	case "markdown":
		return report.WriteMarkdown(w, t)
	}
	// A text table of four long columns wraps badly in a terminal: one block per claim.
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%d. %s\n   measured: %s\n   verdict:  %s\n   command:  %s\n", i+1, r.Claim, r.Measured, r.Verdict, r.Command)
	}
	return nil
}
