package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Duration marshals to JSON as Go writes durations ("1m0s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Policy is the advertised policy as reports print it.
type Policy struct {
	Limit  int64    `json:"limit"`
	Window Duration `json:"window"`
	Burst  int64    `json:"burst"`
}

// Report is one scenario's results: the JSON object of DESIGN.md.
type Report struct {
	Scenario    string   `json:"scenario"`
	Description string   `json:"description,omitempty"`
	Seed        uint64   `json:"seed"`
	Policy      Policy   `json:"policy"`
	Key         string   `json:"key"`
	Results     []Result `json:"results"`
	// UnreadLines counts the lines of a replayed log that could not be read;
	// UnreadLineProblems names the first few ("line 7: ...").
	UnreadLines        int      `json:"unread_lines,omitempty"`
	UnreadLineProblems []string `json:"unread_line_problems,omitempty"`
	// Retries holds the closed-loop clients' results of a scenario with a clients section.
	Retries []RetryResult `json:"retries,omitempty"`
	// KeyRuns are the same traffic run under the scenario's compare_keys, for the keying
	// chart; not part of the JSON (each is `rlsim compare --key K` on the scenario).
	KeyRuns []KeyRun `json:"-"`
	// Memory is what the run held per key; only when asked for (heavy scenarios, --memory).
	Memory *Memory `json:"memory,omitempty"`
	// Reproduce is the command line that makes this report again, for captions and the
	// summary; empty: `rlsim compare --scenario NAME --seed N` (see Command).
	Reproduce string `json:"-"`
}

// Command is the command line that reproduces r.
func (r *Report) Command() string {
	if r.Reproduce != "" {
		return r.Reproduce
	}
	return fmt.Sprintf("rlsim compare --scenario %s --seed %d", r.Scenario, r.Seed)
}

// Table is a rendered-agnostic table: a title, a header and rows of cells. One model
// renders as a text table, Markdown or CSV.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
	// Notes are sentences printed under the table.
	Notes []string
	// Prose left-aligns every column (tables of sentences rather than numbers).
	Prose bool
}

// resultColumns are the columns of the results table, in order.
var resultColumns = []string{
	"algorithm", "requests", "admitted", "rejected", "peak_window_admitted", "over_admission",
	"worst_over_admission", "false_allow_rate", "false_reject_rate", "legit_reject_rate", "attacker_admit_rate",
	"backend_peak", "state_bytes_per_key", "delay_ms_mean",
	// Identity-aware runs only; "-" elsewhere, and all-"-" columns are dropped.
	"broken_page_loads", "legit_users_blocked", "long_run_peak", "unkeyed",
}

// ResultsTable is the human table of one report.
func ResultsTable(r *Report) Table {
	if hasDistributed(r) {
		return DistributedTable(r)
	}
	t := Table{
		Title: fmt.Sprintf("%s — limit %d per %s, burst %d, key %s, seed %d",
			r.Scenario, r.Policy.Limit, time.Duration(r.Policy.Window), r.Policy.Burst, r.Key, r.Seed),
		Header: resultColumns,
	}
	t.Notes = append(t.Notes, identityNotes(r)...)
	if r.UnreadLines > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d log lines could not be read and were not replayed; first: %s",
			r.UnreadLines, strings.Join(r.UnreadLineProblems, "; ")))
	}
	for _, x := range r.Results {
		t.Rows = append(t.Rows, []string{
			x.Algorithm,
			strconv.FormatInt(x.Requests, 10),
			strconv.FormatInt(x.Admitted, 10),
			strconv.FormatInt(x.Rejected, 10),
			strconv.FormatInt(x.PeakWindowAdmitted, 10),
			strconv.FormatFloat(x.OverAdmission, 'f', 2, 64),
			optionalRatio(x.WorstOverAdmission),
			percent(x.FalseAllowRate),
			percent(x.FalseRejectRate),
			optionalPercent(x.LegitRejectRate),
			optionalPercent(x.AttackerAdmitRate),
			strconv.FormatInt(x.BackendPeak, 10),
			strconv.FormatFloat(x.StateBytesPerKey, 'f', 0, 64),
			strconv.FormatFloat(x.DelayMeanMS, 'f', 1, 64),
			optionalPercent(x.BrokenPageLoads),
			usersBlocked(x),
			optionalFloat(x.LongRunPeak),
			optionalCount(x.Unkeyed),
		})
	}
	return t
}

func percent(v float64) string {
	switch {
	case v == 0:
		return "0%"
	case v < 0.0001:
		return strconv.FormatFloat(v*100, 'f', 4, 64) + "%"
	case v < 0.01:
		return strconv.FormatFloat(v*100, 'f', 3, 64) + "%"
	}
	return strconv.FormatFloat(v*100, 'f', 2, 64) + "%"
}

// optionalRatio prints a ratio such as over_admission with two decimals, "-" when absent.
func optionalRatio(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

func optionalPercent(v *float64) string {
	if v == nil {
		return "-"
	}
	return percent(*v)
}

// WriteText renders t as an aligned text table with its title above and notes below.
func WriteText(w io.Writer, t Table) error {
	if t.Title != "" {
		if _, err := fmt.Fprintln(w, t.Title); err != nil {
			return err
		}
	}
	t = dropEmptyColumns(t)
	align := make(tw.Alignment, len(t.Header))
	for i := range align {
		align[i] = tw.AlignRight
	}
	if len(align) > 0 {
		align[0] = tw.AlignLeft
	}
	table := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
	)
	table.Header(toAny(t.Header)...)
	if err := table.Bulk(t.Rows); err != nil {
		return err
	}
	if err := table.Render(); err != nil {
		return err
	}
	return writeNotes(w, t.Notes, "")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func writeNotes(w io.Writer, notes []string, prefix string) error {
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, prefix+n); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown renders t as a GitHub-flavoured Markdown table: cells unpadded, "|" in a
// cell escaped, numbers right-aligned ("---:") and the first column (every column of a
// prose table) left to the reader's default ("---"). tablewriter's Markdown renderer
// cannot write this form: it pads every cell to its column's width, puts an alignment
// colon on every column of the separator, and leaves "|" unescaped.
func WriteMarkdown(w io.Writer, t Table) error {
	t = dropEmptyColumns(t)
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "### %s\n\n", t.Title)
	}
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|")
	for i := range t.Header {
		if i == 0 || t.Prose {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			b.WriteString(n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// csvColumns are the machine columns of the results CSV: raw numbers, one row per
// scenario and algorithm.
var csvColumns = []string{
	"scenario", "seed", "limit", "window", "burst", "key",
	"algorithm", "requests", "admitted", "rejected", "peak_window_admitted", "over_admission",
	"worst_over_admission", "false_allow", "false_reject", "false_allow_rate", "false_reject_rate",
	"legit_reject_rate", "attacker_admit_rate", "backend_peak", "state_bytes_per_key", "keys",
	"delay_ms_mean", "delay_ms_max",
}

// WriteCSV writes the results of every report as one CSV with a header row.
func WriteCSV(w io.Writer, reports []*Report) error {
	cw := csv.NewWriter(w)
	// Fleet figures trail the common columns, and only when some report ran on a fleet,
	// so files of single-limiter runs keep their shape.
	fleet := anyFleet(reports)
	header := csvColumns
	if fleet {
		header = append(slices.Clip(csvColumns), fleetCSVColumns...)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range reports {
		for _, x := range r.Results {
			var extra []string
			if fleet {
				extra = fleetCSVCells(x.Distributed)
			}
			if err := cw.Write(append([]string{
				r.Scenario, strconv.FormatUint(r.Seed, 10), i(r.Policy.Limit), time.Duration(r.Policy.Window).String(), i(r.Policy.Burst), r.Key,
				x.Algorithm, i(x.Requests), i(x.Admitted), i(x.Rejected), i(x.PeakWindowAdmitted), f(x.OverAdmission), opt(x.WorstOverAdmission),
				i(x.FalseAllow), i(x.FalseReject), f(x.FalseAllowRate), f(x.FalseRejectRate),
				opt(x.LegitRejectRate), opt(x.AttackerAdmitRate), i(x.BackendPeak), f(x.StateBytesPerKey), i(int64(x.Keys)),
				f(x.DelayMeanMS), f(x.DelayMaxMS),
			}, extra...)); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes v as indented JSON followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteTableCSV writes a table model as CSV: the header, then the rows.
func WriteTableCSV(w io.Writer, t Table) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.Header); err != nil {
		return err
	}
	if err := cw.WriteAll(t.Rows); err != nil {
		return err
	}
	return cw.Error()
}

// dropEmptyColumns leaves out of a human table the columns in which every row says "-"
// (attacker_admit_rate on a run without attackers): they carry nothing to read.
func dropEmptyColumns(t Table) Table {
	if len(t.Rows) == 0 {
		return t
	}
	keep := make([]bool, len(t.Header))
	for i := range t.Header {
		for _, r := range t.Rows {
			if i < len(r) && r[i] != "-" {
				keep[i] = true
				break
			}
		}
	}
	out := Table{Title: t.Title, Notes: t.Notes, Prose: t.Prose}
	pick := func(cells []string) []string {
		var c []string
		for i, v := range cells {
			if i < len(keep) && keep[i] {
				c = append(c, v)
			}
		}
		return c
	}
	out.Header = pick(t.Header)
	for _, r := range t.Rows {
		out.Rows = append(out.Rows, pick(r))
	}
	return out
}
