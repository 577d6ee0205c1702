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
	// Log is what a replay read of its log; nil for every other run.
	Log *ReplayLog `json:"log,omitempty"`
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

// resultTableColumns are the columns of the results table, in order.
var resultTableColumns = []column[Result]{
	{name: "algorithm", header: "algorithm", key: true, cell: func(x Result) string { return x.Algorithm }},
	{name: "requests", header: "requests", cell: func(x Result) string { return strconv.FormatInt(x.Requests, 10) }},
	{name: "admitted", header: "admitted", cell: func(x Result) string { return strconv.FormatInt(x.Admitted, 10) }},
	{name: "rejected", header: "refused", cell: func(x Result) string { return strconv.FormatInt(x.Rejected, 10) }},
	{name: "peak_window_admitted", header: "peak in\nwindow", cell: func(x Result) string { return strconv.FormatInt(x.PeakWindowAdmitted, 10) }},
	{name: "over_admission", header: "over-\nadmission", cell: func(x Result) string { return strconv.FormatFloat(x.OverAdmission, 'f', 2, 64) }},
	{name: "worst_over_admission", header: "worst\npossible", cell: func(x Result) string { return optionalRatio(x.WorstOverAdmission) }},
	{name: "false_allow_rate", header: "false\nallows", cell: func(x Result) string { return Percent(x.FalseAllowRate) }},
	{name: "false_reject_rate", header: "false\nrejects", cell: func(x Result) string { return Percent(x.FalseRejectRate) }},
	{name: "legit_reject_rate", header: "legit\nrefused", cell: func(x Result) string { return optionalPercent(x.LegitRejectRate) }},
	{name: "attacker_admit_rate", header: "attacker\nadmitted", cell: func(x Result) string { return optionalPercent(x.AttackerAdmitRate) }},
	{name: "backend_peak", header: "backend\npeak", cell: func(x Result) string { return strconv.FormatInt(x.BackendPeak, 10) }},
	{name: "state_bytes_per_key", header: "bytes\nper key", cell: stateBytes},
	{name: "delay_ms_mean", header: "delay\nms", cell: func(x Result) string { return strconv.FormatFloat(x.DelayMeanMS, 'f', 1, 64) }},
	// Identity-aware runs only; "-" elsewhere, and all-"-" columns are dropped.
	{name: "broken_page_loads", header: "pages\nbroken", cell: func(x Result) string { return optionalPercent(x.BrokenPageLoads) }},
	{name: "legit_users_blocked", header: "users\nblocked", cell: usersBlocked},
	{name: "long_run_peak", header: "long-run\npeak", cell: func(x Result) string { return optionalFloat(x.LongRunPeak) }},
	{name: "unkeyed", header: "unkeyed", cell: func(x Result) string { return optionalCount(x.Unkeyed) }},
}

// identityRun reports whether r's traffic names who sent it (actors, page loads,
// attackers, layers): then who was hurt matters more than the single key's figures.
func identityRun(r *Report) bool {
	return anyResult(r.Results, func(x Result) bool {
		return x.LegitUsersBlocked != nil || x.BrokenPageLoads != nil || x.AttackerAdmitRate != nil || len(x.RefusalsByLayer) > 0
	})
}

// resultPreferred are the columns the results table of r shows by default, the most
// important first: the promise (over-admission, false allows and rejects), then who was
// hurt in an identity run, then what the algorithm costs and how it shaped the traffic.
func resultPreferred(r *Report) []string {
	delay := anyResult(r.Results, func(x Result) bool { return x.DelayMeanMS > 0 })
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

// ResultsTable is the human table of one report (the fleet table for a fleet run), with
// the columns c chooses.
func ResultsTable(r *Report, c Columns) Table {
	if hasDistributed(r) {
		return DistributedTable(r, c)
	}
	t := chooseTable(fmt.Sprintf("%s — limit %d per %s, burst %d, key %s, seed %d",
		r.Scenario, r.Policy.Limit, time.Duration(r.Policy.Window), r.Policy.Burst, r.Key, r.Seed),
		resultTableColumns, r.Results, c, resultPreferred(r))
	t.Notes = append(t.Notes, identityNotes(r, dropEmptyColumns(t).Names)...)
	for _, x := range r.Results {
		if x.WouldRefuse > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: shadow mode: every request passed; %d of them the rule would have refused (would_refuse)", x.Algorithm, x.WouldRefuse))
		}
	}
	if r.Log != nil {
		t.Lead = r.Log.String()
		if n := r.Log.PlacementNote(); n != "" {
			t.Notes = append(t.Notes, n)
		}
	}
	if len(r.UnreadLineProblems) > 0 {
		skipped := r.UnreadLines
		if r.Log != nil {
			skipped = r.Log.Unreadable + r.Log.OutOfOrder
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%d log lines were not replayed; first: %s",
			skipped, strings.Join(r.UnreadLineProblems, "; ")))
	}
	return t
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

// WriteText renders t as an aligned text table with its title above and notes below.
// Columns in which every row says "-" are left out. With t.Width set, nothing it writes
// is wider than t.Width display columns unless one word or one cell is.
func WriteText(w io.Writer, t Table) error {
	var b strings.Builder
	if t.Lead != "" {
		b.WriteString(t.Lead + "\n") // one line, however long, for a script to read
	}
	if t.Title != "" {
		for _, line := range wrapTo(t.Title, t.Width) {
			b.WriteString(line + "\n")
		}
	}
	t = dropEmptyColumns(t)
	if t.Width > 0 && t.Prose {
		t = wrapLastColumn(t)
	}
	for _, part := range splitColumns(t) {
		box, err := renderBox(part)
		if err != nil {
			return err
		}
		b.WriteString(box)
	}
	for _, n := range t.Notes {
		for _, line := range wrapTo(n, t.Width) {
			b.WriteString(line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapTo wraps text to width, or leaves it on one line when width is 0.
func wrapTo(text string, width int) []string {
	if width <= 0 {
		return []string{text}
	}
	return Wrap(text, width, "")
}

// renderBox draws t's header and rows in a box, without title or notes.
func renderBox(t Table) (string, error) {
	align := make(tw.Alignment, len(t.Header))
	for i := range align {
		align[i] = tw.AlignRight
		if i < max(t.Keys, 1) || t.Prose {
			align[i] = tw.AlignLeft
		}
	}
	var b strings.Builder
	table := tablewriter.NewTable(&b,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
	)
	table.Header(toAny(t.Header)...)
	if err := table.Bulk(t.Rows); err != nil {
		return "", err
	}
	if err := table.Render(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// boxWidth is the display width of t drawn as a box.
func boxWidth(t Table) int {
	box, err := renderBox(t)
	if err != nil {
		return 0
	}
	return maxLineWidth(box)
}

// wrapLastColumn wraps the cells of a prose table's last column (a description) so the
// table keeps to t.Width.
func wrapLastColumn(t Table) Table {
	last := len(t.Header) - 1
	if last < 1 || boxWidth(t) <= t.Width {
		return t
	}
	widest := maxLineWidth(t.Header[last])
	for _, r := range t.Rows {
		widest = max(widest, maxLineWidth(r[last]))
	}
	room := max(t.Width-(boxWidth(t)-widest), 20)
	out := t
	out.Rows = make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		r = slices.Clone(r)
		r[last] = strings.Join(Wrap(r[last], room, ""), "\n")
		out.Rows[i] = r
	}
	return out
}

// splitColumns splits a table wider than t.Width into tables of consecutive columns that
// each fit, every one repeating the columns that name a row.
func splitColumns(t Table) []Table {
	keys := min(max(t.Keys, 1), len(t.Header))
	if t.Width <= 0 || len(t.Header) <= keys+1 || boxWidth(t) <= t.Width {
		return []Table{t}
	}
	pick := func(cols []int) Table {
		part := Table{Prose: t.Prose, Keys: keys}
		for _, c := range cols {
			part.Header = append(part.Header, t.Header[c])
		}
		for _, r := range t.Rows {
			var row []string
			for _, c := range cols {
				row = append(row, r[c])
			}
			part.Rows = append(part.Rows, row)
		}
		return part
	}
	var parts []Table
	var cols []int
	for c := keys; c < len(t.Header); c++ {
		next := append(slices.Clone(cols), c)
		if len(cols) > 0 && boxWidth(pick(append(keyColumns(keys), next...))) > t.Width {
			parts = append(parts, pick(append(keyColumns(keys), cols...)))
			next = []int{c}
		}
		cols = next
	}
	return append(parts, pick(append(keyColumns(keys), cols...)))
}

func keyColumns(n int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// WriteMarkdown renders t as a GitHub-flavoured Markdown table: cells unpadded, "|" in a
// cell escaped, numbers right-aligned ("---:") and the first column (every column of a
// prose table) left to the reader's default ("---"). tablewriter's Markdown renderer
// cannot write this form: it pads every cell to its column's width, puts an alignment
// colon on every column of the separator, and leaves "|" unescaped.
func WriteMarkdown(w io.Writer, t Table) error {
	t = dropEmptyColumns(t)
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
