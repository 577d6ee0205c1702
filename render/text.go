package render

import (
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rlsim/rlsim/report"
)

// WriteText renders t as an aligned text table with its title above and notes below.
// Columns in which every row says "-" are left out. With t.Width set, nothing it writes
// is wider than t.Width display columns unless one word or one cell is.
func WriteText(w io.Writer, t report.Table) error {
	var b strings.Builder
	if t.Lead != "" {
		b.WriteString(t.Lead + "\n") // one line, however long, for a script to read
	}
	if t.Title != "" {
		for _, line := range report.WrapTo(t.Title, t.Width) {
			b.WriteString(line + "\n")
		}
	}
	t = report.DropEmptyColumns(t)
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
		for _, line := range report.WrapTo(n, t.Width) {
			b.WriteString(line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderBox draws t's header and rows in a box, without title or notes.
func renderBox(t report.Table) (string, error) {
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
func boxWidth(t report.Table) int {
	box, err := renderBox(t)
	if err != nil {
		return 0
	}
	return report.MaxLineWidth(box)
}

// wrapLastColumn wraps the cells of a prose table's last column (a description) so the
// table keeps to t.Width.
func wrapLastColumn(t report.Table) report.Table {
	last := len(t.Header) - 1
	if last < 1 || boxWidth(t) <= t.Width {
		return t
	}
	widest := report.MaxLineWidth(t.Header[last])
	for _, r := range t.Rows {
		widest = max(widest, report.MaxLineWidth(r[last]))
	}
	room := max(t.Width-(boxWidth(t)-widest), 20)
	out := t
	out.Rows = make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		r = slices.Clone(r)
		r[last] = strings.Join(report.Wrap(r[last], room, ""), "\n")
		out.Rows[i] = r
	}
	return out
}

// splitColumns splits a table wider than t.Width into tables of consecutive columns that
// each fit, every one repeating the columns that name a row.
func splitColumns(t report.Table) []report.Table {
	keys := min(max(t.Keys, 1), len(t.Header))
	if t.Width <= 0 || len(t.Header) <= keys+1 || boxWidth(t) <= t.Width {
		return []report.Table{t}
	}
	pick := func(cols []int) report.Table {
		part := report.Table{Prose: t.Prose, Keys: keys}
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
	var parts []report.Table
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

// keyColumns are the first n column indexes: the columns every part of a split table
// repeats.
func keyColumns(n int) []int {
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols
}

// toAny is s as the values the table writer takes.
func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
