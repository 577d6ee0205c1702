package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
)

// newAlgorithmsCmd is `rlsim algorithms`: the catalogue --algorithms reads, in report
// order — the textbook algorithms, the notes' variants and the products' models, each
// product with the parameters its spec takes.
func newAlgorithmsCmd(g *globalOptions, streams IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "algorithms",
		Short: "List the algorithms and product models --algorithms accepts",
		Long: `algorithms lists every name --algorithms and a scenario's algorithms: accept, in report
order: the six textbook algorithms run by default, the design notes' own code, and the
models of real products, each configured in the product's own words as a spec,
PRODUCT:param=value param=value flag (for example 'nginx:rate=10r/s burst=20 nodelay').`,
		Example: `  rlsim algorithms
  rlsim algorithms --format json`,
		Args: argCount(0, 0),
		RunE: func(*cobra.Command, []string) error { return runAlgorithms(g, streams) },
	}
	g.addFormatFlag(c, allFormats...)
	return c
}

type algorithmEntry struct {
	Name    string       `json:"name"`
	Summary string       `json:"summary"`
	Default bool         `json:"default"`
	Params  []paramEntry `json:"params,omitempty"`
}

type paramEntry struct {
	Name string `json:"name"`
	Flag bool   `json:"flag,omitempty"`
	Doc  string `json:"doc"`
}

func runAlgorithms(g *globalOptions, streams IO) error {
	var entries []algorithmEntry
	t := report.Table{Header: []string{"algorithm", "what it is"}, Prose: true, Width: report.DefaultWidth}
	for _, k := range algorithms.Kinds() {
		e := algorithmEntry{Name: k.Name, Summary: k.Summary, Default: k.Default}
		text := k.Summary
		if k.Default {
			text += " (default)"
		}
		var params []string
		for _, p := range k.Params {
			e.Params = append(e.Params, paramEntry{Name: p.Name, Flag: p.Flag, Doc: p.Doc})
			if p.Flag {
				params = append(params, p.Name)
			} else {
				params = append(params, p.Name+"=…")
			}
		}
		if len(params) > 0 {
			text += "; " + k.Name + ":" + strings.Join(params, " ")
		}
		entries = append(entries, e)
		t.Rows = append(t.Rows, []string{k.Name, text})
	}
	return writeListing(streams.Out, g.format, t, map[string]any{"algorithms": entries})
}
