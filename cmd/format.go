package cmd

import (
	"io"

	"github.com/rlsim/rlsim/report"
)

// output is what a command prints on stdout, one value for every --format: JSON is the
// value --format json writes, CSV writes the rows of --format csv, and Human writes the
// table and Markdown forms. A command builds it once; writeOutput is the one place that
// chooses among them by --format.
type output struct {
	// JSON is written as one indented JSON document.
	JSON any
	// CSV writes the machine rows; nil leaves csv to Human, for the commands whose
	// csv is their table.
	CSV func(w io.Writer) error
	// Human writes the table form, or Markdown when markdown is set.
	Human func(w io.Writer, markdown bool) error
}

// writeOutput writes out to w in format (json, csv, markdown, or table for anything
// else: the commands check --format before they run).
func writeOutput(w io.Writer, format string, out output) error {
	switch format {
	case "json":
		return report.WriteJSON(w, out.JSON)
	case "csv":
		if out.CSV != nil {
			return out.CSV(w)
		}
	}
	return out.Human(w, format == "markdown")
}

// tableCSV writes t as CSV: its machine names, then its rows.
func tableCSV(t report.Table) func(io.Writer) error {
	return func(w io.Writer) error { return report.WriteTableCSV(w, t) }
}

// humanTables writes tables one after another, a blank line between them, as text boxes
// or Markdown.
func humanTables(tables ...report.Table) func(io.Writer, bool) error {
	return func(w io.Writer, markdown bool) error {
		format := "table"
		if markdown {
			format = "markdown"
		}
		return writeTables(w, format, tables)
	}
}
