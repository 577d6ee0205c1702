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

func (c Columns) MaxWidth() int {
	if c.Width > 0 {
		return c.Width
	}
	return DefaultWidth
}

// Column is one column a human table of T (a Result, a RetryResult) can show.
type Column[T any] struct {
	// Name is the machine name: the JSON and CSV name, or for a column that joins two
	// figures (client_share: min–max) the name both share.
	Name string
	// Header is what a person reads; "\n" breaks it over two lines.
	Header string
	// Key columns name the row and are always shown.
	Key  bool
	Cell func(T) string
}

// Names returns the machine names of cols.
func Names[T any](cols []Column[T]) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// ColumnNames are the machine names --columns accepts: every column of the results, fleet
// and retry tables.
func ColumnNames() []string {
	var out []string
	for _, n := range slices.Concat(Names(ResultTableColumns), Names(FleetTableColumns), Names(RetryTableColumns)) {
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
	for _, h := range slices.Concat(headers(ResultTableColumns), headers(FleetTableColumns), headers(RetryTableColumns)) {
		if h[0] == name {
			return h[1]
		}
	}
	return name
}

// headers are the machine names and headers of cols.
func headers[T any](cols []Column[T]) [][2]string {
	out := make([][2]string, len(cols))
	for i, c := range cols {
		out[i] = [2]string{c.Name, c.Header}
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

// AnyResult reports whether any of xs satisfies f.
func AnyResult[T any](xs []T, f func(T) bool) bool { return slices.ContainsFunc(xs, f) }

// when returns names if cond holds, else nothing: a preferred column that only matters
// for some runs.
func when(cond bool, names ...string) []string {
	if cond {
		return names
	}
	return nil
}
