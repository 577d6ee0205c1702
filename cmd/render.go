package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/report"
)

// tableOptions are --columns and --wide: which columns the human tables of a run show.
type tableOptions struct {
	columns []string
	wide    bool
}

func (t *tableOptions) addFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringSliceVar(&t.columns, "columns", nil, "columns the tables show after the algorithm, comma-separated machine names (default: those that matter for each scenario, within 100 columns); the names: rlsim help columns")
	f.BoolVar(&t.wide, "wide", false, "show every column of every table, however wide")
}

// check refuses a column no table has, --columns with --wide, and either with a machine
// format, which carries every column.
func (t *tableOptions) check(format string) error {
	if len(t.columns) == 0 && !t.wide {
		return nil
	}
	if format == "json" || format == "csv" {
		flag := "--columns"
		if t.wide {
			flag = "--wide"
		}
		return usagef("%s: --format %s carries every column; %s chooses the columns of table and markdown output", flag, format, flag)
	}
	if len(t.columns) > 0 && t.wide {
		return usagef("--columns and --wide: choose one (--wide shows every column)")
	}
	if bad := report.CheckColumns(t.columns); bad != "" {
		return usagef("--columns: unknown column %q (want %s)", bad, strings.Join(report.ColumnNames(), ", "))
	}
	return nil
}

func (t *tableOptions) choice() report.Columns {
	names := make([]string, len(t.columns))
	for i, c := range t.columns {
		names[i] = strings.TrimSpace(c)
	}
	return report.Columns{Names: names, Wide: t.wide}
}

// renderReports writes reports in format (reportsOutput).
func renderReports(w io.Writer, format string, reports []*report.Report, cols report.Columns, verdict bool) error {
	return writeOutput(w, format, reportsOutput(reports, cols, verdict, nil))
}

// reportsOutput is the output of a run of scenarios: JSON and CSV carry every metric; a
// table or Markdown opens, when verdict is set, with the verdict over all reports and
// then shows each report's tables with the columns cols chooses; the results folder
// holds each report's results and charts (resultsFolder, drawing told of each file).
func reportsOutput(reports []*report.Report, cols report.Columns, verdict bool, drawing func(index, file, files int, name string)) output {
	var value any = reports
	if len(reports) == 1 {
		value = reports[0]
	}
	return output{
		JSON: value,
		CSV:  func(w io.Writer) error { return report.WriteCSV(w, reports) },
		Human: func(w io.Writer, markdown bool) error {
			return writeReportTables(w, markdown, reports, cols, verdict)
		},
		Folder: resultsFolder(reports, drawing),
	}
}

// writeReportTables is the table or Markdown form of renderReports.
func writeReportTables(w io.Writer, markdown bool, reports []*report.Report, cols report.Columns, verdict bool) error {
	format := "table"
	if markdown {
		format = "markdown"
	}
	if verdict {
		v := report.NewVerdict(reports)
		var err error
		if format == "markdown" {
			err = report.WriteVerdictMarkdown(w, v)
		} else if err = report.WriteVerdictText(w, v, report.DefaultWidth); err == nil {
			_, err = io.WriteString(w, "\nBelow, each scenario's table shows the columns that matter for it: --wide shows all of them.\n")
		}
		if err != nil {
			return err
		}
	}
	for i, r := range reports {
		if i > 0 || verdict {
			fmt.Fprintln(w)
		}
		if err := writeTables(w, format, render.Tables(r, cols)); err != nil {
			return err
		}
	}
	if verdict && format == "table" && len(reports) > 1 {
		// The matrix has scrolled away: the answer again, where the terminal stops.
		fmt.Fprintln(w)
		return report.WriteRecap(w, report.NewVerdict(reports), report.DefaultWidth)
	}
	return nil
}

// whereFilesGo is the line that ends a run on the terminal once its files are in place,
// when it writes any under dir: "wrote 276 files (22.0 MB) to out/ — open out/index.html";
// empty when it writes none.
func whereFilesGo(outs *outputSet, dir string) string {
	files, bytes := outs.stagedUnder(dir)
	if files == 0 {
		return ""
	}
	line := fmt.Sprintf("wrote %d files (%s) to %s/", files, report.HumanBytes(bytes), filepath.Clean(dir))
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err == nil || outs.staged(filepath.Join(dir, "index.html")) {
		open := "open " + filepath.Join(filepath.Clean(dir), "index.html")
		if report.DisplayWidth(line+" — "+open) > report.DefaultWidth {
			line += "\n" + open
		} else {
			line += " — " + open
		}
	}
	return line
}

// writeListing renders a command's listing — one table, or value as JSON — in format, to
// w: the catalogues of scenarios and algorithms.
func writeListing(w io.Writer, format string, t report.Table, value any) error {
	var buf bytes.Buffer
	err := writeOutput(&buf, format, output{JSON: value, CSV: tableCSV(t), Human: humanTables(t)})
	if err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// writeTables renders tables one after another, a blank line apart, as Markdown or as
// text tables.
func writeTables(w io.Writer, format string, tables []report.Table) error {
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var err error
		if format == "markdown" {
			err = report.WriteMarkdown(w, t)
		} else {
			err = render.WriteText(w, t)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
