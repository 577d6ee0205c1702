package cmd

import (
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// backoffCommand is the command line that reproduces a run, for chart captions: the
// model, client counts and runs, every other flag the user set that shapes the results,
// and the seed.
func backoffCommand(o *backoffOptions, seed uint64) string {
	parts := []string{"rlsim backoff", "--model " + o.model, "--clients " + o.clients, "--runs " + strconv.Itoa(o.runs)}
	parts = append(parts, o.reproduce...)
	parts = append(parts, "--seed "+strconv.FormatUint(seed, 10))
	return strings.Join(parts, " ")
}

// notReproducing are flags that change where and how results are written, not the
// results themselves (or that backoffCommand writes itself).
var notReproducing = []string{"model", "clients", "runs", "seed", "out", "charts", "format", "series", "workers", "decisions"}

// reproducingFlags lists the flags set on the command line that shape the results, as
// "--name value", in the flag set's (sorted) order.
func reproducingFlags(fs *pflag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		if slices.Contains(notReproducing, f.Name) {
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		if f.Value.Type() == "bool" {
			out = append(out, "--"+f.Name+"="+v)
			return
		}
		out = append(out, "--"+f.Name+" "+v)
	})
	return out
}
