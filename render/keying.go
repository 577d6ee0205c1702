package render

import (
	"fmt"
	"strings"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"gonum.org/v1/plot/vg"
)

// KeyingFigures are the legit-versus-attacker charts of a report whose traffic has
// attackers or whose limit has layers: the share of legitimate requests refused and the
// share of attacker requests admitted. A good key keeps both low; a key the attacker can
// vary (a rotating address, a forged X-Forwarded-For) shows as attacker requests admitted,
// a key many users share (an office's address) as legit requests refused. With KeyRuns,
// one panel per algorithm compares the scenario's own key (first) with each other key;
// without, one panel compares the algorithms under the scenario's key. Other reports give
// none.
func KeyingFigures(r *report.Report) []*chart.Figure {
	hasAttacker, layered := false, false
	for _, x := range r.Results {
		hasAttacker = hasAttacker || x.AttackerAdmitRate != nil
		layered = layered || len(x.RefusalsByLayer) > 0
	}
	if !hasAttacker && !layered && len(r.KeyRuns) == 0 {
		return nil
	}
	if len(r.KeyRuns) > 0 {
		if f := keysFigure(r); f != nil {
			return []*chart.Figure{f}
		}
		return nil
	}
	var names []string
	var legit, attacker []float64
	for _, x := range r.Results {
		names = append(names, report.ResultName(x)) // a fleet's variants keep apart
		legit = append(legit, report.Deref(x.LegitRejectRate))
		attacker = append(attacker, report.Deref(x.AttackerAdmitRate))
	}
	if !hasAttacker {
		// No attacker request was sent: leave the series out rather than draw zeros.
		attacker = nil
	}
	if allZero(legit) && allZero(attacker) {
		// Nobody legit refused, no attacker through: a panel of zeros says nothing the
		// table does not.
		return nil
	}
	return []*chart.Figure{chart.KeyingFigure(chart.Meta{
		Title:   r.Scenario + ": legit requests refused vs attacker requests admitted, per algorithm",
		Caption: report.Caption(r),
	}, names, legit, attacker)}
}

// keysFigure draws one panel per algorithm with the scenario's own key and each of its
// KeyRuns side by side.
func keysFigure(r *report.Report) *chart.Figure {
	keys := []string{report.OwnKeyLabel(r.Key)}
	runs := [][]report.Result{r.Results}
	var commands []string
	for _, k := range r.KeyRuns {
		keys = append(keys, k.Key)
		runs = append(runs, k.Results)
		commands = append(commands, fmt.Sprintf("--key %s", k.Key))
	}
	hasAttacker := false
	for _, rs := range runs {
		for _, x := range rs {
			hasAttacker = hasAttacker || x.AttackerAdmitRate != nil
		}
	}
	title := r.Scenario + ": legit refused vs attacker admitted, per key and algorithm"
	if !hasAttacker {
		title = r.Scenario + ": legit requests refused, per key and algorithm"
	}
	f := &chart.Figure{Name: "keying", Columns: 2, Meta: chart.Meta{
		Title: title,
		Caption: report.Caption(r) + fmt.Sprintf("\nthe scenario's own key (%s) first, then the same traffic with rlsim compare --scenario %s %s",
			keys[0], r.Scenario, strings.Join(commands, " | ")),
	}}
	var panels []chart.BarPanel
	var unharmed []string
	for _, x := range r.Results {
		legit := make([]float64, len(keys))
		var attacker []float64
		if hasAttacker {
			attacker = make([]float64, len(keys))
		}
		for k, rs := range runs {
			for _, y := range rs {
				if y.Algorithm != x.Algorithm {
					continue
				}
				legit[k] = report.Deref(y.LegitRejectRate)
				if hasAttacker {
					attacker[k] = report.Deref(y.AttackerAdmitRate)
				}
			}
		}
		if allZero(legit) && allZero(attacker) {
			unharmed = append(unharmed, x.Algorithm)
			continue
		}
		panel := chart.KeyingFigure(chart.Meta{}, keys, legit, attacker).Panels[0].(chart.BarPanel)
		panel.Title = x.Algorithm
		panels = append(panels, panel)
	}
	if len(panels) == 0 {
		return nil
	}
	if len(unharmed) > 0 {
		f.Meta.Caption += fmt.Sprintf("\n%s: none refused and none admitted under any key", strings.Join(unharmed, ", "))
	}
	if len(panels) == 1 {
		f.Columns = 1
	}
	rows := (len(panels) + f.Columns - 1) / f.Columns
	f.Height = vg.Length(1.4+3.2*float64(rows)) * vg.Inch
	for i, panel := range panels {
		if i%f.Columns != 0 {
			panel.YLabel = ""
		}
		f.Panels = append(f.Panels, panel)
	}
	return f
}

// allZero reports whether every value is zero (true for none).
func allZero(values []float64) bool {
	for _, v := range values {
		if v != 0 {
			return false
		}
	}
	return true
}
