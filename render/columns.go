package render

import (
	"slices"

	"github.com/rlsim/rlsim/report"
)

// chooseTable builds the table of rows under the columns c asks for. By default it shows
// the key columns and the preferred ones (names in order of importance), in the columns'
// own order, dropping the least important until the table fits c's width; a table of
// key columns alone that is still too wide is split when rendered.
func chooseTable[T any](title string, cols []report.Column[T], rows []T, c report.Columns, preferred []string) report.Table {
	build := func(chosen []report.Column[T]) report.Table {
		t := report.Table{Title: title}
		for _, col := range chosen {
			t.Header = append(t.Header, col.Header)
			t.Names = append(t.Names, col.Name)
			if col.Key {
				t.Keys++
			}
		}
		for _, x := range rows {
			row := make([]string, len(chosen))
			for i, col := range chosen {
				row[i] = col.Cell(x)
			}
			t.Rows = append(t.Rows, row)
		}
		return t
	}
	keysAnd := func(names []string, inGivenOrder bool) []report.Column[T] {
		var chosen []report.Column[T]
		for _, col := range cols {
			if col.Key || (!inGivenOrder && slices.Contains(names, col.Name)) {
				chosen = append(chosen, col)
			}
		}
		if inGivenOrder {
			for _, n := range names {
				if i := slices.IndexFunc(cols, func(col report.Column[T]) bool { return col.Name == n && !col.Key }); i >= 0 {
					chosen = append(chosen, cols[i])
				}
			}
		}
		return chosen
	}
	switch {
	case c.Wide:
		return build(cols)
	case len(c.Names) > 0:
		return build(keysAnd(c.Names, true))
	}
	t := build(keysAnd(preferred, false))
	t.Width = c.MaxWidth()
	for len(preferred) > 0 && boxWidth(report.DropEmptyColumns(t)) > t.Width {
		preferred = preferred[:len(preferred)-1]
		t = build(keysAnd(preferred, false))
		t.Width = c.MaxWidth()
	}
	return t
}
