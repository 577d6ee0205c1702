package probe

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
)

// Report is the output of `rlsim probe`: the value --format json writes, whose tables
// and CSV row the other formats print. The names are a contract.
type Report struct {
	Target    string         `json:"target"`
	Scenario  string         `json:"scenario"`
	Seed      uint64         `json:"seed"`
	Policy    ReportPolicy   `json:"policy"`
	TimeScale float64        `json:"time_scale"`
	KeyedBy   string         `json:"keyed_by"`
	JudgedOn  string         `json:"judged_on"`
	Results   []TargetReport `json:"results"`
}

// ReportPolicy is the promise a probe judges against, L per W. Burst appears only when
// --burst gave one: it configures a bucket algorithm given to --model, never the promise.
type ReportPolicy struct {
	Limit  int64           `json:"limit"`
	Window report.Duration `json:"window"`
	Burst  int64           `json:"burst,omitempty"`
}

// TargetReport is what was measured of one target: the probe's Result, the promise judged
// on the estimated arrivals, and what --model, --identify and --server-log found.
type TargetReport struct {
	Target string `json:"target"`
	Result
	// OneWayMS is what was added to each send time to estimate its arrival, and Promise
	// the promise judged on those arrivals within the jitter measured.
	OneWayMS float64 `json:"one_way_ms"`
	Promise  Promise `json:"promise"`
	// With --model: the spec, the share of decisions it reproduces (those within jitter
	// counted), the differences it does not explain by jitter, and every difference.
	Model             string            `json:"model,omitempty"`
	ModelAgreement    *float64          `json:"model_agreement,omitempty"`
	ModelDifferences  *int              `json:"model_differences,omitempty"`
	ModelWithinJitter *int              `json:"model_within_jitter,omitempty"`
	ModelDiffering    []ModelDifference `json:"model_differing,omitempty"`
	// With --identify: the best configurations, best first.
	Identified []Identified `json:"identified,omitempty"`
	// With --server-log: how the requests were found in the server's log, whose arrival
	// times the promise, the model and the search were judged on.
	ServerLog *LogMatch `json:"server_log,omitempty"`
}

// ModelDifference is one decision the model made otherwise; ArrivalMS is counted from
// the probe's start.
type ModelDifference struct {
	Seq          int     `json:"seq"`
	Key          string  `json:"key"`
	ArrivalMS    float64 `json:"arrival_ms"`
	Status       int     `json:"status"`
	Allowed      bool    `json:"allowed"`
	ModelAllowed bool    `json:"model_allowed"`
	WithinJitter bool    `json:"within_jitter"`
	MovedMS      float64 `json:"moved_ms,omitempty"`
}

// Identified is one configuration --identify found.
type Identified struct {
	Model        string  `json:"model"`
	Agreement    float64 `json:"agreement"`
	Agreed       int     `json:"agreed"`
	WithinJitter int     `json:"within_jitter"`
	Decisions    int     `json:"decisions"`
}

// Millis is d in milliseconds, as the report's *_ms fields hold durations.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// SetModel fills r's model fields from a, the agreement of a model with the decisions of
// obs; start is the probe's start in Unix ns, from which arrivals are counted.
func (r *TargetReport) SetModel(a Agreement, obs Observed, start int64) {
	rate, real, jittered := a.Rate(), 0, a.WithinJitter
	for _, d := range a.Differences {
		if !d.WithinJitter {
			real++
		}
		x := obs.Decisions[d.Index]
		r.ModelDiffering = append(r.ModelDiffering, ModelDifference{Seq: x.Seq, Key: x.Key,
			ArrivalMS: float64(x.Arrival-start) / 1e6, Status: x.Status, Allowed: x.Admitted,
			ModelAllowed: d.Model, WithinJitter: d.WithinJitter, MovedMS: Millis(d.Moved)})
	}
	r.Model, r.ModelAgreement, r.ModelDifferences, r.ModelWithinJitter = a.Spec, &rate, &real, &jittered
	if len(algorithms.Lookup(a.Spec).Params) == 0 {
		r.Model = Candidate{Spec: a.Spec, Policy: a.Policy}.Name()
	}
}

// IdentifiedOf is the report's form of the configurations Identify found, best first.
func IdentifiedOf(found []Candidate) []Identified {
	out := make([]Identified, len(found))
	for i, c := range found {
		a := c.Agreement
		out[i] = Identified{Model: c.Name(), Agreement: a.Rate(), Agreed: a.Agreed, WithinJitter: a.WithinJitter, Decisions: a.Decisions}
	}
	return out
}

// WriteDecisions writes the decisions file (--decisions): one CSV row per request sent,
// in DecisionColumns, with the endpoint's decision, model's decision (when model is not
// nil) and the promise's verdict of each request that got one; start is the probe's
// start, from which exchanges count their times.
func WriteDecisions(w io.Writer, exchanges []Exchange, start time.Time, obs Observed, model []bool, promise Promise) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(DecisionColumns); err != nil {
		return err
	}
	bySeq := make(map[int]int, len(obs.Decisions))
	for i, d := range obs.Decisions {
		bySeq[d.Seq] = i
	}
	base := start.UnixNano()
	for i, x := range exchanges {
		if x.Unsent {
			continue
		}
		row := []string{strconv.Itoa(i + 1), x.Key, itoa(base + int64(x.Sent)), itoa(base + int64(x.Received)), strconv.Itoa(x.Status), "", "", "", x.Tag}
		if j, ok := bySeq[i+1]; ok {
			row[5] = strconv.FormatBool(obs.Decisions[j].Admitted)
			if model != nil {
				row[6] = strconv.FormatBool(model[j])
			}
			row[7] = promise.Allowed[j].String()
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// tableColumns are the columns of the human table of what a probe measured.
var tableColumns = []string{"scenario", "requests", "admitted", "rejected", "other", "peak_window_admitted", "over_admission",
	"false_allow_rate", "false_reject_rate"}

// arrivalsNote says what the promise was judged on: the server's own arrival times when
// its log was read (and how the requests it does not hold were placed), else the send
// times plus half the least round trip.
func (rep Report) arrivalsNote(r TargetReport) string {
	if m := r.ServerLog; m != nil {
		return fmt.Sprintf("Promise on the arrivals in the server's log %s (%d of %d requests found there, the rest at sent + %.2f ms, the median offset of those found): %s.",
			m.File, m.Matched, m.Matched+len(m.Missing), m.OffsetMS, r.Promise.Text(rep.policy()))
	}
	return fmt.Sprintf("Promise on the arrivals (sent + %.2f ms, half the least round trip): %s.", r.OneWayMS, r.Promise.Text(rep.policy()))
}

// Tables are the human tables of a probe: what it measured, the model's and the
// identified limiters' agreement when asked, and the checks of the quota headers (with
// the Retry-After check when retries were sent on it).
func (rep Report) Tables(retries bool) []report.Table {
	r := rep.Results[0]
	other := "-" // a column of dashes is left out
	if r.Other > 0 {
		other = itoa(r.Other)
	}
	main := report.Table{
		Title: fmt.Sprintf("probe of %s — scenario %s, seed %d, time scale %g, %s; promise %d per %s, judged on send times",
			rep.Target, rep.Scenario, rep.Seed, rep.TimeScale, rep.KeyedBy, rep.Policy.Limit, time.Duration(rep.Policy.Window)),
		Header: tableColumns,
		Rows: [][]string{{
			rep.Scenario, itoa(r.Requests), itoa(r.Admitted), itoa(r.Rejected), other, itoa(r.PeakWindowAdmitted),
			strconv.FormatFloat(r.OverAdmission, 'f', 2, 64), pct(r.FalseAllowRate), pct(r.FalseRejectRate),
		}},
		Notes: []string{fmt.Sprintf("Requests were sent up to %.1f ms after they were due (99%% within %.1f ms) and answered within %.1f ms.",
			r.LateMSMax, r.LateMSP99, r.AnswerMSMax),
			rep.arrivalsNote(r),
			fmt.Sprintf("False rejects in arrival order: %d whatever the jitter (%s), %d more within it.",
				r.Promise.FalseRejects, pct(r.Promise.FalseRejectRate), r.Promise.FalseRejectsWithinJitter)},
	}
	tables := []report.Table{main}
	if r.Model != "" {
		tables = append(tables, modelTable(r))
	}
	if len(r.Identified) > 0 {
		tables = append(tables, IdentifiedTable(r.Identified))
	}
	h := r.Headers
	checks := report.Table{
		Title:  fmt.Sprintf("headers: %d of %d responses carried a quota", h.WithQuota, r.Requests),
		Header: []string{"check", "checked", "broken"},
		Rows: [][]string{
			{"a request within the remaining units passes", itoa(h.RemainingChecked), itoa(h.RemainingBroken)},
			{"a request after the reset (t) passes", itoa(h.ResetChecked), itoa(h.ResetBroken)},
		},
		Notes: []string{"Checked only where no other request of the key came between the header and the request held to it."},
	}
	if h.WithQuota == 0 {
		checks.Notes = []string{"The target sent no RateLimit, RateLimit-* or X-RateLimit-* fields: nothing to hold it to."}
	}
	if retries {
		checks.Rows = append(checks.Rows, []string{"a lone retry after Retry-After passes", itoa(h.RetryAfterChecked), itoa(h.RetryAfterBroken)})
		if h.RetriesSent == 0 {
			checks.Notes = append(checks.Notes, "No refusal carried a Retry-After (within --max-retry-wait): nothing was retried.")
		} else {
			checks.Notes = append(checks.Notes, fmt.Sprintf("Retries sent after Retry-After: %d, admitted: %d.", h.RetriesSent, h.RetriesAdmitted))
		}
	}
	return append(tables, checks)
}

func (rep Report) policy() algorithms.Policy {
	return algorithms.Policy{Limit: rep.Policy.Limit, Window: time.Duration(rep.Policy.Window)}
}

// maxDifferencesShown bounds the rows of the model's table; JSON carries every one.
const maxDifferencesShown = 12

func modelTable(r TargetReport) report.Table {
	decisions := r.Requests - r.Other
	t := report.Table{
		Title: fmt.Sprintf("model %s: agrees on %.2f%% of %d decisions — %d within jitter (±%.2f ms), %d real differences",
			r.Model, 100**r.ModelAgreement, decisions, *r.ModelWithinJitter, r.Promise.JitterMS, *r.ModelDifferences),
		Header: []string{"seq", "key", "arrival_ms", "endpoint", "model", "why"},
	}
	for i, d := range r.ModelDiffering {
		if i == maxDifferencesShown {
			t.Notes = append(t.Notes, fmt.Sprintf("and %d more (--format json lists them all).", len(r.ModelDiffering)-i))
			break
		}
		why := "a real disagreement"
		switch {
		case d.WithinJitter && d.MovedMS != 0:
			why = fmt.Sprintf("within jitter: agrees moved %+.2f ms", d.MovedMS)
		case d.WithinJitter:
			why = "within jitter: follows an earlier move"
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(d.Seq), d.Key, strconv.FormatFloat(d.ArrivalMS, 'f', 2, 64),
			verdictWord(d.Allowed), verdictWord(d.ModelAllowed), why})
	}
	if len(r.ModelDiffering) == 0 {
		t.Header, t.Notes = nil, []string{"The model decided every request as the endpoint did."}
	}
	return t
}

func verdictWord(allowed bool) string {
	if allowed {
		return "admitted"
	}
	return "refused"
}

// IdentifiedTable is the table of the configurations --identify (and rlsim identify)
// found, best first, titled by the best.
func IdentifiedTable(found []Identified) report.Table {
	best := found[0]
	t := report.Table{
		Title:  fmt.Sprintf("behaves like %s — %d of %d decisions", best.Model, best.Agreed+best.WithinJitter, best.Decisions),
		Header: []string{"model", "agreed", "+jitter", "agreement"},
	}
	for _, c := range found {
		t.Rows = append(t.Rows, []string{c.Model, strconv.Itoa(c.Agreed), strconv.Itoa(c.WithinJitter), pct(c.Agreement)})
	}
	t.Notes = []string{"Searched every model of rlsim algorithms, with rates, bursts and windows read off the admissions;",
		"agreed on the estimated arrivals, +jitter more with arrivals moved within the jitter."}
	return t
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func pct(v float64) string {
	if v == 0 {
		return "0%"
	}
	return strconv.FormatFloat(v*100, 'f', 2, 64) + "%"
}

// CSVColumns are the columns of `rlsim probe --format csv`: raw numbers, durations in
// seconds.
var CSVColumns = []string{"scenario", "seed", "limit", "window", "time_scale", "target", "requests", "admitted", "rejected",
	"other", "peak_window_admitted", "over_admission", "false_allow", "false_reject", "false_allow_rate", "false_reject_rate",
	"keys", "late_ms_max", "late_ms_p99", "answer_ms_max", "with_quota", "remaining_checked", "remaining_broken", "reset_checked", "reset_broken",
	"retries_sent", "retries_admitted", "retry_after_checked", "retry_after_broken",
	"one_way_ms", "verdict", "jitter_ms", "within_jitter", "false_rejects_by_arrival", "false_rejects_within_jitter",
	"model", "model_agreement", "model_differences", "model_within_jitter", "identified", "identified_agreement"}

// WriteCSV writes the report as `rlsim probe --format csv` does: CSVColumns, then one row
// of raw numbers.
func (rep Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVColumns); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	r := rep.Results[0]
	h := r.Headers
	row := []string{rep.Scenario, strconv.FormatUint(rep.Seed, 10), itoa(rep.Policy.Limit), f(time.Duration(rep.Policy.Window).Seconds()),
		f(rep.TimeScale), r.Target, itoa(r.Requests), itoa(r.Admitted), itoa(r.Rejected), itoa(r.Other), itoa(r.PeakWindowAdmitted),
		f(r.OverAdmission), itoa(r.FalseAllow), itoa(r.FalseReject), f(r.FalseAllowRate), f(r.FalseRejectRate),
		itoa(int64(r.Keys)), f(r.LateMSMax), f(r.LateMSP99), f(r.AnswerMSMax), itoa(h.WithQuota), itoa(h.RemainingChecked), itoa(h.RemainingBroken),
		itoa(h.ResetChecked), itoa(h.ResetBroken), itoa(h.RetriesSent), itoa(h.RetriesAdmitted), itoa(h.RetryAfterChecked),
		itoa(h.RetryAfterBroken)}
	p := r.Promise
	row = append(row, f(r.OneWayMS), p.Verdict, f(p.JitterMS), itoa(p.Uncertain), itoa(p.FalseRejects), itoa(p.FalseRejectsWithinJitter))
	model := []string{r.Model, "", "", ""}
	if r.Model != "" {
		model[1], model[2], model[3] = f(*r.ModelAgreement), strconv.Itoa(*r.ModelDifferences), strconv.Itoa(*r.ModelWithinJitter)
	}
	row = append(row, model...)
	if len(r.Identified) > 0 {
		row = append(row, r.Identified[0].Model, f(r.Identified[0].Agreement))
	} else {
		row = append(row, "", "")
	}
	if err := cw.Write(row); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}
