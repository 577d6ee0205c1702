package render

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

// Figures are the charts of one scenario's report, in the order a reader wants them: the
// busiest key's trailing window against the limit over time, what each algorithm admitted
// and refused over time, accuracy, memory, legit against attacker outcomes
// (KeyingFigures), then the herd and load of retrying clients (RetryFigures). Figures that have no data (no timelines
// recorded, no keys, no retrying clients) are left out.
func Figures(r *report.Report) []*chart.Figure {
	caption := report.Caption(r)
	var figs []*chart.Figure
	var runs []chart.Run
	var windows []chart.Series
	var bin time.Duration
	for _, x := range r.Results {
		tl := x.Timeline
		if tl == nil {
			continue
		}
		bin = tl.Bin
		perSecond := float64(time.Second) / float64(tl.Bin)
		run := chart.Run{Name: report.ResultName(x)}
		win := chart.Series{Name: report.ResultName(x)}
		for i := range tl.Admitted {
			at := (time.Duration(i) * tl.Bin).Seconds()
			run.Admitted = append(run.Admitted, chart.Point{X: at, Y: float64(tl.Admitted[i]) * perSecond})
			run.Refused = append(run.Refused, chart.Point{X: at, Y: float64(tl.Refused[i]) * perSecond})
			win.Points = append(win.Points, chart.Point{X: at, Y: float64(tl.WindowAdmitted[i])})
		}
		// A closing point at the end of the last bin, so steps draw that bin's width too.
		end := (time.Duration(len(tl.Admitted)) * tl.Bin).Seconds()
		if n := len(run.Admitted); n > 0 {
			run.Admitted = append(run.Admitted, chart.Point{X: end, Y: run.Admitted[n-1].Y})
			run.Refused = append(run.Refused, chart.Point{X: end, Y: run.Refused[n-1].Y})
			win.Points = append(win.Points, chart.Point{X: end, Y: win.Points[n-1].Y})
		}
		runs = append(runs, run)
		windows = append(windows, win)
	}
	if fleet := FleetFigures(r); len(fleet) > 0 {
		// A fleet's trailing window is the effective limit: drawn per variant, with the
		// outages and scale-outs it went through.
		figs = append(figs, fleet...)
		windows = nil
	}
	figs = append(figs, RaceFigures(r)...)
	figs = append(figs, DesignFigures(r)...)
	if len(runs) > 0 && windows != nil {
		figs = append(figs,
			chart.WindowFigure(chart.Meta{
				Title:   r.Scenario + ": busiest key's count in the trailing window vs the limit",
				Caption: report.WithNote(caption, identicalNote(windows)),
			}, windows, float64(r.Policy.Limit), time.Duration(r.Policy.Window)))
		if e, ok := boundaryEvent(r); ok {
			zoom := zoomSeries(r, e)
			from, to := time.Duration(e.From).Seconds(), time.Duration(e.To).Seconds()
			figs = append(figs, chart.ZoomFigure(chart.Meta{
				Title: fmt.Sprintf("%s: the busiest key's trailing window from %.3g s to %.3g s, request by request",
					r.Scenario, from, to),
				Caption: report.WithNote(caption, identicalNote(zoom)),
			}, zoom, float64(r.Policy.Limit), time.Duration(r.Policy.Window), from, to))
		}
	}
	if len(runs) > 0 {
		figs = append(figs,
			chart.TimelineFigure(chart.Meta{
				Title:   r.Scenario + ": requests admitted and refused over time, per algorithm",
				Caption: caption,
			}, runs, bin),
		)
	}
	if len(r.Results) == 0 {
		return append(figs, RetryFigures(r)...)
	}
	var names, memNames, uncounted []string
	var over, falseAllow, falseReject, memory []float64
	var memResults []report.Result
	for _, x := range r.Results {
		names = append(names, report.ResultName(x))
		over = append(over, x.OverAdmission)
		falseAllow = append(falseAllow, x.FalseAllowRate)
		falseReject = append(falseReject, x.FalseRejectRate)
		if x.StateBytesUnknown { // a user's limiter: its state is not ours to count
			uncounted = append(uncounted, report.ResultName(x))
			continue
		}
		memNames = append(memNames, report.ResultName(x))
		memResults = append(memResults, x)
		memory = append(memory, x.StateBytesPerKey)
	}
	figs = append(figs, chart.AccuracyFigure(chart.Meta{
		Title:   r.Scenario + ": over-admission, false allows and false rejects, per algorithm",
		Caption: caption,
	}, names, over, falseAllow, falseReject))
	if slices.ContainsFunc(memory, func(b float64) bool { return b > 0 }) {
		series := []chart.BarSeries{{Name: "in-process", Values: memory}}
		if redis, ok := redisModelSeries(memResults, r.Policy.Limit); ok {
			series = append(series, redis)
		}
		memCaption := caption
		if len(uncounted) > 0 {
			memCaption += fmt.Sprintf(" Not drawn: %s, whose state lives outside rlsim.", report.JoinAnd(uncounted))
		}
		figs = append(figs, chart.MemoryFigure(chart.Meta{
			Title:   r.Scenario + ": memory per key, per algorithm",
			Caption: memCaption,
		}, memNames, series))
	}
	figs = append(figs, KeyingFigures(r)...)
	return append(figs, RetryFigures(r)...)
}

// identicalNote names the series that coincide point for point ("identical here: gcra =
// token-bucket"), or is empty when none do: a reader who sees one line where there are
// two is told why.
func identicalNote(series []chart.Series) string {
	var groups []string
	seen := make([]bool, len(series))
	for i := range series {
		if seen[i] {
			continue
		}
		same := []string{series[i].Name}
		for j := i + 1; j < len(series); j++ {
			if !seen[j] && slices.Equal(series[i].Points, series[j].Points) {
				seen[j] = true
				same = append(same, series[j].Name)
			}
		}
		if len(same) > 1 {
			groups = append(groups, strings.Join(same, " = "))
		}
	}
	if len(groups) == 0 {
		return ""
	}
	return "identical here: " + strings.Join(groups, "; ")
}
