package cmd

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

func newScenariosCmd(g *globalOptions, streams IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "scenarios [list | show NAME]",
		Short: "List the built-in scenarios or print one",
		Example: `  rlsim scenarios
  rlsim scenarios show boundary-burst`,
		Args: argCount(0, 0),
		RunE: func(*cobra.Command, []string) error {
			return runScenariosList(g, streams)
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios with their descriptions",
		Example: `  rlsim scenarios list
  rlsim scenarios list --format json`,
		Args: argCount(0, 0),
		RunE: func(*cobra.Command, []string) error {
			return runScenariosList(g, streams)
		},
	}
	g.addFormatFlag(c, allFormats...)
	g.addFormatFlag(list, allFormats...)
	c.AddCommand(list, &cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Print a scenario file",
		Example: `  # the boundary case's file, to copy and edit into a scenario of your own
  rlsim scenarios show boundary-burst`,
		Args: argCount(1, 1),
		RunE: func(_ *cobra.Command, args []string) error {
			sc, err := loadScenario(args[0])
			if err != nil {
				return err
			}
			_, err = io.WriteString(streams.Out, sc.Text)
			return err
		},
	})
	return c
}

type scenarioEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func runScenariosList(g *globalOptions, streams IO) error {
	var entries []scenarioEntry
	t := report.Table{Header: []string{"scenario", "description"}, Prose: true, Width: report.DefaultWidth}
	for _, n := range scenario.Builtins() {
		sc, err := loadScenario(n)
		if err != nil {
			return err
		}
		entries = append(entries, scenarioEntry{sc.Name, sc.Description})
		t.Rows = append(t.Rows, []string{sc.Name, sc.Description})
	}
	return writeListing(streams.Out, g.format, t, map[string]any{"scenarios": entries})
}

// loadScenario is scenario.Load for a name the command line gave: a name that is neither
// a built-in scenario nor a file is a usage error (exit 2).
func loadScenario(nameOrFile string) (*scenario.Scenario, error) {
	sc, err := scenario.Load(nameOrFile)
	if errors.Is(err, scenario.ErrUnknownScenario) {
		return nil, usageError{err: err}
	}
	return sc, err
}
