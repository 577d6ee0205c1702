package tune

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Metric names a figure a goal bounds; the names are those of --goal and of the JSON.
type Metric string

// The metrics a goal may bound.
const (
	// LegitRefused is the share of legitimate requests refused (legit_reject_rate).
	LegitRefused Metric = "legit-refused"
	// AttackerAdmitted is the share of attacker requests admitted (attacker_admit_rate).
	AttackerAdmitted Metric = "attacker-admitted"
	// BackendPeak is the most cost admitted in any 1 s (backend_peak), per second.
	BackendPeak Metric = "backend-peak"
	// OverAdmission is peak_window_admitted / limit (over_admission).
	OverAdmission Metric = "over-admission"
	// FalseRejects is the share of requests refused that the promise allowed
	// (false_reject_rate).
	FalseRejects Metric = "false-rejects"
	// KeyRefused is, at a percentile P of keys, the share of a key's legitimate
	// requests refused: "key-refused<=0.1%@p99.9" holds when 99.9% of the keys with
	// legitimate requests have at most 0.1% of them refused.
	KeyRefused Metric = "key-refused"
)

var metricUnits = map[Metric]string{
	LegitRefused: "%", AttackerAdmitted: "%", BackendPeak: "/s", OverAdmission: "", FalseRejects: "%", KeyRefused: "%",
}

// Metrics lists the goal metrics, in the order help and outputs give them.
func GoalMetrics() []Metric {
	return []Metric{LegitRefused, AttackerAdmitted, BackendPeak, OverAdmission, FalseRejects, KeyRefused}
}

// Goal is one bound: Metric <= Max. Max is a fraction for the shares (0.001 for 0.1%),
// a cost per second for backend-peak, a ratio for over-admission. Percentile (0 < P ≤ 1)
// is set for key-refused only.
type Goal struct {
	Metric     Metric  `json:"metric"`
	Max        float64 `json:"max"`
	Percentile float64 `json:"percentile,omitempty"`
	// Text is the goal as given.
	Text string `json:"text"`
}

// String renders the goal as --goal takes it.
func (g Goal) String() string {
	if g.Text != "" {
		return g.Text
	}
	return g.Metric.format(g.Max) // not reached for parsed goals
}

// legitSide says whether the goal is about refusing legitimate requests: those fall
// monotonically as a limit or a burst grows, which the search bisects on.
func (g Goal) legitSide() bool { return g.Metric == LegitRefused || g.Metric == KeyRefused }

// GoalError is a goal that could not be read, with the 1-based column of the fault.
type GoalError struct {
	Text   string
	Column int
	Reason string
}

func (e *GoalError) Error() string {
	return fmt.Sprintf("%q at column %d: %s", e.Text, e.Column, e.Reason)
}

// ParseGoal reads METRIC<=VALUE[UNIT][@pPERCENTILE]: "legit-refused<=0.1%",
// "attacker-admitted<=5%", "backend-peak<=500/s", "over-admission<=1.05",
// "false-rejects<=1%", "key-refused<=0.1%@p99.9". A share is written with % (or as a
// fraction from 0 to 1); backend-peak with or without "/s".
func ParseGoal(text string) (Goal, error) {
	fail := func(col int, format string, args ...any) (Goal, error) {
		return Goal{}, &GoalError{Text: text, Column: col, Reason: fmt.Sprintf(format, args...)}
	}
	i := strings.Index(text, "<=")
	if i < 0 {
		if j := strings.IndexAny(text, "<>="); j >= 0 {
			return fail(j+1, "want <= (goals are upper bounds: legit-refused<=0.1%%)")
		}
		return fail(len(text)+1, "want METRIC<=VALUE (legit-refused<=0.1%%)")
	}
	name := strings.TrimSpace(text[:i])
	m := Metric(name)
	if _, ok := metricUnits[m]; !ok {
		return fail(1, "unknown metric %q (want one of %s)", name, metricList())
	}
	g := Goal{Metric: m, Text: text}
	rest := text[i+2:]
	col := i + 3
	value, pct, hasPct := strings.Cut(rest, "@")
	if hasPct {
		if m != KeyRefused {
			return fail(col+len(value), "a percentile (@p99.9) applies to key-refused only")
		}
		p, ok := strings.CutPrefix(pct, "p")
		v, err := strconv.ParseFloat(p, 64)
		if !ok || err != nil || !(v > 0 && v <= 100) {
			return fail(col+len(value)+1, "want a percentile of keys as @pN with 0 < N <= 100 (@p99.9)")
		}
		g.Percentile = v / 100
	} else if m == KeyRefused {
		return fail(len(text)+1, "key-refused needs the share of keys it holds for: @p99.9")
	}
	v := strings.TrimSpace(value)
	unit := ""
	for _, u := range []string{"%", "/s"} {
		if s, ok := strings.CutSuffix(v, u); ok {
			v, unit = strings.TrimSpace(s), u
			break
		}
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return fail(col, "%q is not a number of at least 0", strings.TrimSpace(value))
	}
	want := metricUnits[m]
	switch {
	case unit == "%" && want == "%":
		x /= 100
	case unit == "" && want == "%":
		if x > 1 {
			return fail(col, "a share is a percentage (5%%) or a fraction from 0 to 1, got %s", v)
		}
	case unit == "/s" && want == "/s", unit == "" && want == "/s", unit == "" && want == "":
	default:
		return fail(col+len(v), "%s takes no unit %q", m, unit)
	}
	if x > 1 && want == "%" {
		return fail(col, "a share above 100%% bounds nothing")
	}
	g.Max = x
	return g, nil
}

func metricList() string {
	var s []string
	for _, m := range GoalMetrics() {
		s = append(s, string(m))
	}
	return strings.Join(s, ", ")
}

// format renders a value of m in its unit.
func (m Metric) format(v float64) string {
	switch metricUnits[m] {
	case "%":
		return formatPercent(v)
	case "/s":
		return strconv.FormatFloat(v, 'f', -1, 64) + "/s"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// formatPercent renders a share with enough digits to tell 0.1% from 0.
func formatPercent(v float64) string {
	switch {
	case v == 0:
		return "0%"
	case v < 0.0001:
		return strconv.FormatFloat(v*100, 'g', 2, 64) + "%"
	case v < 0.01:
		return strconv.FormatFloat(v*100, 'f', 3, 64) + "%"
	}
	return strconv.FormatFloat(v*100, 'f', 2, 64) + "%"
}

// value is what the candidate's metrics give for g.
func (g Goal) value(m *Metrics) float64 {
	switch g.Metric {
	case LegitRefused:
		return m.LegitRejectRate()
	case AttackerAdmitted:
		return m.AttackerAdmitRate()
	case BackendPeak:
		return float64(m.BackendPeak)
	case OverAdmission:
		return m.OverAdmission
	case FalseRejects:
		return m.FalseRejectRate()
	case KeyRefused:
		return m.keyRefusedAt(g.Percentile)
	}
	return math.NaN()
}

// miss is by how much v misses g: 0 when met, else the excess relative to the bound
// (absolute when the bound is 0).
func (g Goal) miss(v float64) float64 {
	if v <= g.Max {
		return 0
	}
	if g.Max == 0 {
		return v
	}
	return (v - g.Max) / g.Max
}

// FormatValue writes v in the unit of the goal text's metric: "0.25%", "120/s", "1.050".
func FormatValue(goalText string, v float64) string {
	name, _, _ := strings.Cut(goalText, "<=")
	return Metric(strings.TrimSpace(name)).format(v)
}
