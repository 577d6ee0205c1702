package cmd

import (
	"testing"

	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
)

// Every figure of every built-in scenario (the ones compare runs; the heavy ones, run by
// name only, draw the same figures from fewer results) can be read: each panel gets at
// least chart.MinPanelHeight × chart.MinPanelWidth, holds data that is not all zeros,
// has a title that fits, and bar or dot names that do not overlap; the figure's title
// fits the page with room for a wider fallback face. cluster-racy's 72 runs and
// cluster-skew's 60 are the cases that broke the fixed-size figures.
func TestEveryBuiltinScenariosFiguresCanBeRead(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs every built-in scenario")
	}
	figures := 0
	for _, name := range scenario.Builtins() {
		sc, err := loadScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Heavy {
			continue
		}
		rep, err := run.Run(sc, run.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rep.KeyRuns, err = keyRuns(sc, run.Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		figs := render.Figures(rep)
		if len(figs) == 0 {
			t.Errorf("%s: no figure", name)
		}
		for _, f := range figs {
			figures++
			for _, p := range f.Problems() {
				t.Errorf("%s: %s", name, p)
			}
		}
	}
	if figures < 60 {
		t.Errorf("%d figures checked: fewer than the built-in scenarios draw", figures)
	}
}
