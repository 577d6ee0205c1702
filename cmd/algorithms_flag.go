package cmd

import (
	"encoding/csv"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
)

// algorithmsValue is the --algorithms flag of every command that takes one: a list of
// specs separated by commas (an algorithm's name, or a product's model in its own words,
// "nginx:rate=10r/s burst=20 nodelay"), each parsed while the flag is read and kept in
// its canonical form, the name every output gives it. The flag may be repeated; a spec
// given twice runs once. allow, when set, narrows what a command can run.
type algorithmsValue struct {
	dst   *[]string
	allow func(*algorithms.Kind) error
	set   bool
}

func (v *algorithmsValue) String() string { return strings.Join(*v.dst, ",") }
func (v *algorithmsValue) Type() string   { return "specs" }

func (v *algorithmsValue) Set(s string) error {
	r := csv.NewReader(strings.NewReader(s))
	r.TrimLeadingSpace = true
	fields, err := r.Read()
	if err != nil {
		return fmt.Errorf("not a comma-separated list: %v", err)
	}
	if !v.set {
		*v.dst, v.set = nil, true
	}
	for _, f := range fields {
		if strings.TrimSpace(f) == "" {
			return fmt.Errorf("an empty entry in %q", s)
		}
		spec, err := algorithms.Parse(f)
		if err != nil {
			return err
		}
		if v.allow != nil {
			if err := v.allow(spec.Kind); err != nil {
				return fmt.Errorf("%s: %w", spec.Text, err)
			}
		}
		if !slices.Contains(*v.dst, spec.Text) {
			*v.dst = append(*v.dst, spec.Text)
		}
	}
	return nil
}

// addAlgorithmsFlag adds --algorithms to c, filling dst; allow (may be nil) refuses the
// kinds c cannot run.
func addAlgorithmsFlag(c *cobra.Command, dst *[]string, usage string, allow func(*algorithms.Kind) error) {
	c.Flags().Var(&algorithmsValue{dst: dst, allow: allow}, "algorithms",
		usage+"; comma-separated specs: an algorithm's name or a product's model ('nginx:rate=10r/s burst=20'); see rlsim algorithms")
}
