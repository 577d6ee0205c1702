package report

import (
	"github.com/rlsim/rlsim/report/chart"
)

// KeyingFigures are the legit-versus-attacker charts of a report whose traffic has
// attackers or whose limit has layers: per algorithm, the share of legitimate requests
// refused and the share of attacker requests admitted, under the scenario's keying. A
// good key keeps both low; a key the attacker can vary (a rotating address, a forged
// X-Forwarded-For) shows as attacker requests admitted, a key shared by many users (an
// office's address) as legit requests refused. Other reports give none.
func KeyingFigures(r *Report) []*chart.Figure {
	var names []string
	var legit, attacker []float64
	hasAttacker, layered := false, false
	for _, x := range r.Results {
		names = append(names, x.Algorithm)
		legit = append(legit, deref(x.LegitRejectRate))
		attacker = append(attacker, deref(x.AttackerAdmitRate))
		hasAttacker = hasAttacker || x.AttackerAdmitRate != nil
		layered = layered || len(x.RefusalsByLayer) > 0
	}
	if !hasAttacker && !layered {
		return nil
	}
	if !hasAttacker {
		// No attacker request was sent: leave the series out rather than draw zeros.
		attacker = nil
	}
	return []*chart.Figure{chart.KeyingFigure(chart.Meta{
		Title:   r.Scenario + ": legit requests refused vs attacker requests admitted, per algorithm",
		Caption: Caption(r),
	}, names, legit, attacker)}
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
