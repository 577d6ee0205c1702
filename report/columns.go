package report

import (
	"slices"
	"strings"
)

// Columns chooses the columns of a report's human tables (text and Markdown). JSON and
// CSV carry every metric whatever it says.
type Columns struct {
	// Names are the columns to show after those that name a row (algorithm, variant,
	// strategy), in this order, by their machine names; a table shows the ones it has.
	// Empty: the default choice.
	Names []string
	// Wide shows every column.
	Wide bool
	// Width is the display width the default choice keeps to; 0 means DefaultWidth.
	Width int
}

func (c Columns) width() int {
	if c.Width > 0 {
		return c.Width
	}
	return DefaultWidth
}

// column is one column a human table of T (a Result, a RetryResult) can show.
type column[T any] struct {
	// name is the machine name: the JSON and CSV name, or for a column that joins two
	// figures (client_share: min–max) the name both share.
	name string
	// header is what a person reads; "\n" breaks it over two lines.
	header string
	// key columns name the row and are always shown.
	key  bool
	cell func(T) string
}

// chooseTable builds the table of rows under the columns c asks for. By default it shows
// the key columns and the preferred ones (names in order of importance), in the columns'
// own order, dropping the least important until the table fits c's width; a table of
// key columns alone that is still too wide is split when rendered.
func chooseTable[T any](title string, cols []column[T], rows []T, c Columns, preferred []string) Table {
	build := func(chosen []column[T]) Table {
		t := Table{Title: title}
		for _, col := range chosen {
			t.Header = append(t.Header, col.header)
			t.Names = append(t.Names, col.name)
			if col.key {
				t.Keys++
			}
		}
		for _, x := range rows {
			row := make([]string, len(chosen))
			for i, col := range chosen {
				row[i] = col.cell(x)
			}
			t.Rows = append(t.Rows, row)
		}
		return t
	}
	keysAnd := func(names []string, inGivenOrder bool) []column[T] {
		var chosen []column[T]
		for _, col := range cols {
			if col.key || (!inGivenOrder && slices.Contains(names, col.name)) {
				chosen = append(chosen, col)
			}
		}
		if inGivenOrder {
			for _, n := range names {
				if i := slices.IndexFunc(cols, func(col column[T]) bool { return col.name == n && !col.key }); i >= 0 {
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
	t.Width = c.width()
	for len(preferred) > 0 && boxWidth(dropEmptyColumns(t)) > t.Width {
		preferred = preferred[:len(preferred)-1]
		t = build(keysAnd(preferred, false))
		t.Width = c.width()
	}
	return t
}

// names returns the machine names of cols.
func names[T any](cols []column[T]) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

// ColumnNames are the machine names --columns accepts: every column of the results, fleet
// and retry tables.
func ColumnNames() []string {
	var out []string
	for _, n := range slices.Concat(names(resultTableColumns), names(fleetTableColumns), names(retryTableColumns)) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// ColumnHeader is the header a person reads over the column named name (its machine
// name, as JSON and CSV spell it): "over-\nadmission" for over_admission; name itself
// when no table has it.
func ColumnHeader(name string) string {
	for _, h := range slices.Concat(headers(resultTableColumns), headers(fleetTableColumns), headers(retryTableColumns)) {
		if h[0] == name {
			return h[1]
		}
	}
	return name
}

// headers are the machine names and headers of cols.
func headers[T any](cols []column[T]) [][2]string {
	out := make([][2]string, len(cols))
	for i, c := range cols {
		out[i] = [2]string{c.name, c.header}
	}
	return out
}

// CheckColumns returns the first of names that no table has, or "" when all are known.
func CheckColumns(names []string) string {
	known := ColumnNames()
	for _, n := range names {
		if !slices.Contains(known, strings.TrimSpace(n)) {
			return n
		}
	}
	return ""
}

// anyResult reports whether any of xs satisfies f.
func anyResult[T any](xs []T, f func(T) bool) bool { return slices.ContainsFunc(xs, f) }

// when returns names if cond holds, else nothing: a preferred column that only matters
// for some runs.
func when(cond bool, names ...string) []string {
	if cond {
		return names
	}
	return nil
}
