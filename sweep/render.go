package sweep

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rlsim/rlsim/report"
)

// tableMetrics are the columns of the sweep table after the parameters and the algorithm.
var tableMetrics = []string{
	"requests", "admitted", "peak_window_admitted", "over_admission", "false_allow_rate",
	"false_reject_rate", "legit_reject_rate", "attacker_admit_rate", "backend_peak", "delay_ms_mean",
}

// Table is one line per grid point and algorithm: the point's parameter values, then the
// algorithm's metrics. raw prints numbers in full (for CSV) rather than rounded.
func Table(res *Results, raw bool) report.Table {
	t := report.Table{
		Title: fmt.Sprintf("sweep of %s over %s — %d points", res.Sweep.Scenario, paramNames(res.Sweep.Params), res.Sweep.Points),
	}
	for _, p := range res.Sweep.Params {
		t.Header = append(t.Header, p.Name)
	}
	t.Header = append(t.Header, "algorithm")
	t.Header = append(t.Header, tableMetrics...)
	for _, row := range res.Rows {
		for _, r := range row.Results {
			m := Metrics(r)
			line := append(slices.Clone(row.Values), report.ResultName(r))
			for _, name := range tableMetrics {
				v, ok := m[name]
				line = append(line, formatMetric(name, v, ok, raw))
			}
			t.Rows = append(t.Rows, line)
		}
	}
	if res.Shard != nil {
		t.Notes = append(t.Notes, fmt.Sprintf("shard %d/%d: merge every shard with `rlsim merge` for the whole sweep", res.Shard.K, res.Shard.N))
	}
	return t
}

func paramNames(params []Param) string {
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.Name
	}
	return strings.Join(names, " × ")
}

func formatMetric(name string, v float64, ok, raw bool) string {
	switch {
	case !ok:
		if raw {
			return ""
		}
		return "-"
	case raw:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case strings.HasSuffix(name, "_rate"):
		return strconv.FormatFloat(v*100, 'f', 3, 64) + "%"
	case name == "over_admission":
		return strconv.FormatFloat(v, 'f', 2, 64)
	case name == "delay_ms_mean":
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// Metrics returns the numeric fields of a result by their JSON names; a null rate (no
// request of that class) is absent.
func Metrics(r report.Result) map[string]float64 {
	data, _ := json.Marshal(r) // a Result always marshals: numbers and strings only
	var all map[string]any
	_ = json.Unmarshal(data, &all)
	m := map[string]float64{}
	for k, v := range all {
		if f, ok := v.(float64); ok {
			m[k] = f
		}
	}
	return m
}

// MetricNames lists the metrics a chart can plot, sorted.
func MetricNames() []string {
	var names []string
	for k := range Metrics(report.Result{LegitRejectRate: new(float64), AttackerAdmitRate: new(float64)}) {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
