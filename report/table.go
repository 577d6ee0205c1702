package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Table is a rendered-agnostic table: a title, a header and rows of cells. One model
// renders as a text table, Markdown or CSV.
type Table struct {
	// Lead is a line printed before the title (a replay's account of its log).
	Lead  string
	Title string
	// Header is what a person reads over each column; a "\n" breaks it over two lines.
	Header []string
	// Names are the columns' machine names, as JSON and CSV spell them; nil when Header
	// already is.
	Names []string
	Rows  [][]string
	// Notes are sentences printed under the table.
	Notes []string
	// Prose left-aligns every column (tables of sentences rather than numbers).
	Prose bool
	// Width, when set, is the display width the text rendering keeps to: the title and
	// notes wrap, a prose table wraps its last column, and a table still wider is split
	// into several, each repeating the Keys leading columns that name a row.
	Width int
	// Keys is how many leading columns name a row (at least one).
	Keys int
}

// MachineNames are t's column names as JSON and CSV spell them.
func (t Table) MachineNames() []string {
	if t.Names != nil {
		return t.Names
	}
	return t.Header
}

// ResultTableColumns are the columns of the results table, in order.
var ResultTableColumns = []Column[Result]{
	{Name: "algorithm", Header: "algorithm", Key: true, Cell: func(x Result) string { return x.Algorithm }},
	{Name: "requests", Header: "requests", Cell: func(x Result) string { return strconv.FormatInt(x.Requests, 10) }},
	{Name: "admitted", Header: "admitted", Cell: func(x Result) string { return strconv.FormatInt(x.Admitted, 10) }},
	{Name: "rejected", Header: "refused", Cell: func(x Result) string { return strconv.FormatInt(x.Rejected, 10) }},
	{Name: "peak_window_admitted", Header: "peak in\nwindow", Cell: func(x Result) string { return strconv.FormatInt(x.PeakWindowAdmitted, 10) }},
	{Name: "over_admission", Header: "over-\nadmission", Cell: func(x Result) string { return strconv.FormatFloat(x.OverAdmission, 'f', 2, 64) }},
	{Name: "worst_over_admission", Header: "worst\npossible", Cell: func(x Result) string { return optionalRatio(x.WorstOverAdmission) }},
	{Name: "false_allow_rate", Header: "false\nallows", Cell: func(x Result) string { return Percent(x.FalseAllowRate) }},
	{Name: "false_reject_rate", Header: "false\nrejects", Cell: func(x Result) string { return Percent(x.FalseRejectRate) }},
	{Name: "legit_reject_rate", Header: "legit\nrefused", Cell: func(x Result) string { return optionalPercent(x.LegitRejectRate) }},
	{Name: "attacker_admit_rate", Header: "attacker\nadmitted", Cell: func(x Result) string { return optionalPercent(x.AttackerAdmitRate) }},
	{Name: "backend_peak", Header: "backend\npeak", Cell: func(x Result) string { return strconv.FormatInt(x.BackendPeak, 10) }},
	{Name: "state_bytes_per_key", Header: "bytes\nper key", Cell: stateBytes},
	{Name: "delay_ms_mean", Header: "delay\nms", Cell: func(x Result) string { return strconv.FormatFloat(x.DelayMeanMS, 'f', 1, 64) }},
	// Identity-aware runs only; "-" elsewhere, and all-"-" columns are dropped.
	{Name: "broken_page_loads", Header: "pages\nbroken", Cell: func(x Result) string { return optionalPercent(x.BrokenPageLoads) }},
	{Name: "legit_users_blocked", Header: "users\nblocked", Cell: usersBlocked},
	{Name: "long_run_peak", Header: "long-run\npeak", Cell: func(x Result) string { return optionalFloat(x.LongRunPeak) }},
	{Name: "unkeyed", Header: "unkeyed", Cell: func(x Result) string { return optionalCount(x.Unkeyed) }},
}

// identityRun reports whether r's traffic names who sent it (actors, page loads,
// attackers, layers): then who was hurt matters more than the single key's figures.
func identityRun(r *Report) bool {
	return AnyResult(r.Results, func(x Result) bool {
		return x.LegitUsersBlocked != nil || x.BrokenPageLoads != nil || x.AttackerAdmitRate != nil || len(x.RefusalsByLayer) > 0
	})
}

// ResultPreferred are the columns the results table of r shows by default, the most
// important first: the promise (over-admission, false allows and rejects), then who was
// hurt in an identity run, then what the algorithm costs and how it shaped the traffic.
func ResultPreferred(r *Report) []string {
	delay := AnyResult(r.Results, func(x Result) bool { return x.DelayMeanMS > 0 })
	if r.Log != nil {
		// A replay answers "how did my traffic fare": how much of it each algorithm
		// refused comes first.
		return slices.Concat([]string{"requests", "rejected", "over_admission", "false_allow_rate", "false_reject_rate"},
			when(identityRun(r), "legit_reject_rate", "attacker_admit_rate", "legit_users_blocked", "unkeyed"),
			[]string{"admitted", "worst_over_admission"}, when(delay, "delay_ms_mean"), []string{"backend_peak", "state_bytes_per_key", "peak_window_admitted"})
	}
	if identityRun(r) {
		return slices.Concat([]string{"over_admission", "legit_reject_rate", "attacker_admit_rate", "broken_page_loads",
			"legit_users_blocked", "false_allow_rate", "false_reject_rate", "unkeyed", "admitted"},
			when(delay, "delay_ms_mean"), []string{"worst_over_admission", "long_run_peak", "state_bytes_per_key", "requests"})
	}
	return slices.Concat([]string{"over_admission", "false_allow_rate", "false_reject_rate", "admitted", "worst_over_admission"},
		when(delay, "delay_ms_mean", "backend_peak"), []string{"state_bytes_per_key", "peak_window_admitted", "requests", "rejected"})
}

// Percent prints a rate as the tables do: 0%, then four, three or two decimals as the
// rate gets larger, so a small rate never prints as 0.
func Percent(v float64) string {
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
	return Percent(*v)
}

// WrapTo wraps text to width, or leaves it on one line when width is 0.
func WrapTo(text string, width int) []string {
	if width <= 0 {
		return []string{text}
	}
	return Wrap(text, width, "")
}

// WriteMarkdown renders t as a GitHub-flavoured Markdown table: cells unpadded, "|" in a
// cell escaped, numbers right-aligned ("---:") and the first column (every column of a
// prose table) left to the reader's default ("---"). tablewriter's Markdown renderer
// cannot write this form: it pads every cell to its column's width, puts an alignment
// colon on every column of the separator, and leaves "|" unescaped.
func WriteMarkdown(w io.Writer, t Table) error {
	t = DropEmptyColumns(t)
	var b strings.Builder
	if t.Lead != "" {
		fmt.Fprintf(&b, "%s\n\n", t.Lead)
	}
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
	header := make([]string, len(t.Header))
	for i, h := range t.Header {
		header[i] = OneLine(h)
	}
	row(header)
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

// OneLine joins a header broken over lines ("over-\nadmission") back into one
// ("over-admission", "false rejects").
func OneLine(header string) string {
	lines := strings.Split(header, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i > 0 && !strings.HasSuffix(lines[i-1], "-") {
			b.WriteByte(' ')
		}
		b.WriteString(l)
	}
	return b.String()
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
	if err := cw.Write(t.MachineNames()); err != nil {
		return err
	}
	if err := cw.WriteAll(t.Rows); err != nil {
		return err
	}
	return cw.Error()
}

// DropEmptyColumns leaves out of a human table the columns in which every row says "-"
// (attacker_admit_rate on a run without attackers): they carry nothing to read.
func DropEmptyColumns(t Table) Table {
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
	out := Table{Lead: t.Lead, Title: t.Title, Notes: t.Notes, Prose: t.Prose, Width: t.Width, Keys: t.Keys}
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
	if t.Names != nil {
		out.Names = pick(t.Names)
	}
	for _, r := range t.Rows {
		out.Rows = append(out.Rows, pick(r))
	}
	return out
}

// stateBytes is the bytes-per-key cell: "-" for a limiter whose state rlsim cannot count.
func stateBytes(x Result) string {
	if x.StateBytesUnknown {
		return "-"
	}
	return strconv.FormatFloat(x.StateBytesPerKey, 'f', 0, 64)
}
