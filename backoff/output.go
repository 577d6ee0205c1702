package backoff

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/report"
)

// Report is the output of `rlsim backoff`, the value --format json writes, whose table
// and CSV rows the other formats print. The names are a contract.
type Report struct {
	Model      string          `json:"model"`
	Seed       uint64          `json:"seed"`
	Base       report.Duration `json:"base"`
	Cap        report.Duration `json:"cap"`
	Bin        report.Duration `json:"bin"`
	RetryAfter string          `json:"retry_after,omitempty"`
	// Processes is the number of client processes the policies' state is kept per (0:
	// one per client).
	Processes int                   `json:"processes"`
	Setup     string                `json:"setup"`
	Results   report.BackoffResults `json:"results"`
	// Verdicts answer the three questions a reader asks of the table.
	Verdicts []Verdict `json:"verdicts"`
}

// Verdict is the answer to one question, at one client count: the strategies that
// did best (several on a tie) and the best and worst values of the metric.
type Verdict struct {
	Question   string   `json:"question"`
	Metric     string   `json:"metric"`
	Clients    int      `json:"clients"`
	Strategies []string `json:"strategies"`
	Value      float64  `json:"value"`
	// Worst and WorstStrategy are the other end of the table.
	Worst         float64 `json:"worst"`
	WorstStrategy string  `json:"worst_strategy"`
	// GiveUps is the winner's give-ups a run: a strategy may make few calls because it
	// abandoned work.
	GiveUps float64 `json:"give_ups"`
	// Complete and CompleteValue are the best of the strategies that gave up no job, when
	// the winner gave some up.
	Complete      []string `json:"complete_strategies,omitempty"`
	CompleteValue *float64 `json:"complete_value,omitempty"`
}

// questions are the questions, each the metric that answers it (lowest wins).
var questions = []struct {
	question, metric string
	value            func(report.RetryResult) float64
}{
	{"fewest calls", "calls_mean", func(r report.RetryResult) float64 { return r.CallsMean }},
	{"fastest to drain", "completion_ms_mean", func(r report.RetryResult) float64 { return r.CompletionMSMean }},
	{"gentlest peak", "peak_arrivals", func(r report.RetryResult) float64 { return r.PeakArrivals }},
}

// Verdicts answers each question (fewest calls, fastest to drain, gentlest peak) from the results at the largest client count.
func Verdicts(results []report.RetryResult) []Verdict {
	if len(results) == 0 {
		return nil
	}
	largest := 0
	for _, r := range results {
		largest = max(largest, r.Clients)
	}
	var at []report.RetryResult
	for _, r := range results {
		if r.Clients == largest {
			at = append(at, r)
		}
	}
	out := make([]Verdict, 0, len(questions))
	for _, q := range questions {
		v := Verdict{Question: q.question, Metric: q.metric, Clients: largest, Value: q.value(at[0]), Worst: q.value(at[0]), WorstStrategy: at[0].Strategy}
		for _, r := range at {
			x := q.value(r)
			if x < v.Value {
				v.Value = x
			}
			if x > v.Worst {
				v.Worst, v.WorstStrategy = x, r.Strategy
			}
		}
		for _, r := range at {
			if q.value(r) == v.Value {
				v.Strategies = append(v.Strategies, r.Strategy)
				v.GiveUps = max(v.GiveUps, r.GiveUps)
			}
		}
		if v.GiveUps > 0 {
			for _, r := range at {
				x := q.value(r)
				switch {
				case r.GiveUps > 0:
				case v.CompleteValue == nil || x < *v.CompleteValue:
					v.CompleteValue, v.Complete = &x, []string{r.Strategy}
				case x == *v.CompleteValue:
					v.Complete = append(v.Complete, r.Strategy)
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// VerdictLines are the verdicts as sentences under the table: one per question, then
// whether one strategy wins all three.
func (rep Report) VerdictLines() []string {
	if len(rep.Verdicts) == 0 || len(rep.Results) < 2 {
		return nil
	}
	var lines []string
	prefix := ""
	counts := map[int]bool{}
	for _, r := range rep.Results {
		counts[r.Clients] = true
	}
	if len(counts) > 1 {
		prefix = fmt.Sprintf("at %d clients, ", rep.Verdicts[0].Clients)
	}
	winners := map[string]int{}
	for _, v := range rep.Verdicts {
		var what, complete string
		show := func(x float64) string { return fmt.Sprintf("%.1f", x) }
		switch v.Metric {
		case "calls_mean":
			what = fmt.Sprintf("%.1f calls a run", v.Value)
		case "completion_ms_mean":
			what = fmt.Sprintf("the last client done at %.1f s", v.Value/1000)
			show = func(x float64) string { return fmt.Sprintf("%.1f s", x/1000) }
		default:
			what = fmt.Sprintf("at most %.1f retries in a %s bin", v.Value, time.Duration(rep.Bin))
		}
		if v.CompleteValue != nil {
			complete = fmt.Sprintf("; of those that gave up none: %s, %s", strings.Join(v.Complete, " = "), show(*v.CompleteValue))
		}
		line := fmt.Sprintf("%s%s: %s, %s (worst: %s, %s)", prefix, v.Question, strings.Join(v.Strategies, " = "), what, v.WorstStrategy, show(v.Worst))
		if v.Worst == v.Value {
			line = fmt.Sprintf("%s%s: every strategy ties, %s", prefix, v.Question, what)
		} else if v.GiveUps > 0 {
			line += fmt.Sprintf(" — but it gave up %.1f jobs a run%s", v.GiveUps, complete)
		}
		lines = append(lines, line)
		for _, s := range v.Strategies {
			winners[s]++
		}
	}
	all := ""
	for _, r := range rep.Results {
		if winners[r.Strategy] == len(rep.Verdicts) && all == "" {
			all = r.Strategy
		}
	}
	if all != "" {
		line := all + " wins all three"
		for _, r := range rep.Results {
			if r.Strategy == all && r.Clients == rep.Verdicts[0].Clients && r.GiveUps > 0 {
				line += fmt.Sprintf(", by giving up %.1f jobs a run", r.GiveUps)
			}
		}
		lines = append(lines, line)
	} else {
		lines = append(lines, "no strategy wins all three")
	}
	return lines
}

// Table is the human table: the figures that answer the three questions and what
// the strategies cost; --format json and csv carry every figure.
func (rep Report) Table() report.Table {
	counts := map[int]bool{}
	runs := 0
	for _, r := range rep.Results {
		counts[r.Clients] = true
		runs = r.Runs
	}
	title := fmt.Sprintf("backoff, model %s — %s; base %s, cap %s, bin %s, seed %d",
		rep.Model, rep.Setup, time.Duration(rep.Base), time.Duration(rep.Cap), time.Duration(rep.Bin), rep.Seed)
	if len(counts) == 1 && len(rep.Results) > 0 {
		title += fmt.Sprintf("; %d clients, %d runs", rep.Results[0].Clients, runs)
	}
	t := report.Table{Title: title, Width: report.DefaultWidth, Keys: 1}
	// The overload model is about amplification: it replaces calls (calls = amp × requests).
	amp := rep.Model == "overload"
	t.Header = []string{"strategy"}
	if len(counts) > 1 {
		t.Header = append(t.Header, "clients")
		t.Keys = 2
	}
	if amp {
		t.Header = append(t.Header, "amp")
	} else {
		t.Header = append(t.Header, "calls")
	}
	t.Header = append(t.Header, "p50\n(s)", "p99\n(s)", "max\n(s)", "peak", "wasted", "gave\nup", "done\ntwice")
	// Columns that are zero for every strategy are left out ("-" cells are dropped).
	optional := []struct {
		name, legend string
		value        func(report.RetryResult) float64
	}{
		{"withheld", "withheld: attempts a policy refused to send", func(r report.RetryResult) float64 { return r.Withheld }},
		{"failed", "failed: jobs ended by a 4xx", func(r report.RetryResult) float64 { return r.Failed }},
		{"wrong", "wrong: retries of a 4xx (retried_wrongly)", func(r report.RetryResult) float64 { return r.RetriedWrongly }},
	}
	var shown []int
	for i, c := range optional {
		if slices.ContainsFunc(rep.Results, func(r report.RetryResult) bool { return c.value(r) != 0 }) {
			shown = append(shown, i)
			t.Header = append(t.Header, c.name)
		}
	}
	f1 := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	seconds := func(ms float64) string { return strconv.FormatFloat(ms/1000, 'f', 1, 64) }
	dups := rep.Model != "overload" // the overload backend runs nothing twice
	for _, x := range rep.Results {
		row := []string{x.Strategy}
		if len(counts) > 1 {
			row = append(row, strconv.Itoa(x.Clients))
		}
		if amp {
			row = append(row, strconv.FormatFloat(x.Amplification, 'f', 2, 64))
		} else {
			row = append(row, f1(x.CallsMean))
		}
		dup := "-"
		if dups {
			dup = strconv.FormatFloat(x.Duplicates, 'f', 1, 64)
		}
		row = append(row, seconds(x.CompletionMSP50), seconds(x.CompletionMSP99), seconds(x.CompletionMSMax),
			f1(x.PeakArrivals), f1(x.Wasted), f1(x.GiveUps), dup)
		for _, i := range shown {
			row = append(row, f1(optional[i].value(x)))
		}
		t.Rows = append(t.Rows, row)
	}
	first := "calls: attempts"
	if amp {
		first = "amp: server calls ÷ client requests"
	}
	t.Notes = append(t.Notes,
		first+"; p50, p99, max: each client's time to finish, in seconds; peak: most retries in a "+time.Duration(rep.Bin).String()+" bin",
		fmt.Sprintf("wasted: calls without success; gave up: jobs abandoned; done twice: work done twice; means of %d runs", runs))
	if len(shown) > 0 {
		var legend []string
		for _, i := range shown {
			legend = append(legend, optional[i].legend)
		}
		t.Notes = append(t.Notes, strings.Join(legend, "; "))
	}
	t.Notes = append(t.Notes, rep.VerdictLines()...)
	return t
}

// CSVColumns are the machine columns: the first ten as they have always been, then
// the figures added since.
var CSVColumns = []string{
	"strategy", "clients", "runs", "calls_mean", "completion_ms_mean", "peak_arrivals", "peak_arrivals_max",
	"give_ups", "duplicates", "retry_after_refused_share",
	"completion_ms_p50", "completion_ms_p99", "completion_ms_max", "load_peak", "requests", "amplification",
	"wasted", "withheld", "failed", "retried_wrongly",
}

// MachineTable is every figure of every result as raw numbers, for CSV.
func (rep Report) MachineTable() report.Table {
	t := report.Table{Header: CSVColumns}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, x := range rep.Results {
		share := ""
		if x.RetryAfterRefusedShare != nil {
			share = g(*x.RetryAfterRefusedShare)
		}
		t.Rows = append(t.Rows, []string{
			x.Strategy, strconv.Itoa(x.Clients), strconv.Itoa(x.Runs), g(x.CallsMean), g(x.CompletionMSMean),
			g(x.PeakArrivals), strconv.FormatInt(x.PeakArrivalsMax, 10), g(x.GiveUps), g(x.Duplicates), share,
			g(x.CompletionMSP50), g(x.CompletionMSP99), g(x.CompletionMSMax), g(x.LoadPeak), g(x.Requests), g(x.Amplification),
			g(x.Wasted), g(x.Withheld), g(x.Failed), g(x.RetriedWrongly),
		})
	}
	return t
}

// WriteSeries writes --series: per strategy and client count, the first run's attempts of
// any kind and arrivals (retries, whose highest bin is peak_arrivals) per bin.
func WriteSeries(w io.Writer, bin time.Duration, results []report.RetryResult) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"strategy", "clients", "t_ms", "attempts", "arrivals"}); err != nil {
		return err
	}
	binMS := float64(bin) / float64(time.Millisecond)
	for _, r := range results {
		for i, v := range r.Attempts {
			var arrivals int64
			if i < len(r.Arrivals) {
				arrivals = r.Arrivals[i]
			}
			if err := cw.Write([]string{r.Strategy, strconv.Itoa(r.Clients),
				strconv.FormatFloat(float64(i)*binMS, 'g', -1, 64), strconv.FormatInt(v, 10), strconv.FormatInt(arrivals, 10)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
