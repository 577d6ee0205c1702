package cmd

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

// output is everything a command writes: on stdout one value for every --format, and
// under --out its figures in every --charts format and the results folder's other files.
// JSON is the value --format json writes, CSV writes the rows of --format csv, and Human
// writes the table and Markdown forms. A command builds it once; writeOutput is the one
// place that chooses among them by --format, and stageOutput the one place that writes
// the files --out and --charts ask for.
type output struct {
	// JSON is written as one indented JSON document.
	JSON any
	// CSV writes the machine rows; nil leaves csv to Human, for the commands whose
	// csv is their table.
	CSV func(w io.Writer) error
	// Human writes the table form, or Markdown when markdown is set.
	Human func(w io.Writer, markdown bool) error
	// Figures builds the charts, each drawn in every --charts format under --out, in
	// FigureDir. It is called only when --out and --charts both ask for charts, so a run
	// that draws none builds none; nil for a command that draws no charts.
	Figures func() ([]*chart.Figure, error)
	// FigureDir is the folder under --out the figures go to; "" is --out itself.
	FigureDir string
	// Folder renders the results folder's other files, given the --charts formats (the
	// per-scenario results and index.html of a run, see renderResults); it is called
	// whenever --out names a folder. nil for a command whose folder holds figures only.
	Folder func(formats []string) ([]outFile, error)
}

// destination is where a command's output goes: stdout in format (the commands check
// --format before they run), and, unless out is "", the folder out with the figures in
// each of the chart formats (none: no figures).
type destination struct {
	format string
	out    string
	charts []string
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

// writeResults writes out where dest says: it renders stdout, stages the folder's files
// beside those outs already holds (a command's own files: backoff's --series, worst-case's
// --schedule-out, ...), and only then writes stdout and puts every file in place
// (commitWithStdout). A failure anywhere leaves no file written, half or whole.
func writeResults(outs *outputSet, stdout io.Writer, dest destination, out output) error {
	text, err := stageOutput(outs, dest, out)
	if err != nil {
		return err
	}
	return commitWithStdout(outs, stdout, text)
}

// stageOutput renders out's stdout in dest.format, returned for the caller to write, and
// stages in outs the files of dest.out (stageFolder). Everything is rendered in memory
// before any file is staged.
func stageOutput(outs *outputSet, dest destination, out output) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeOutput(&buf, dest.format, out); err != nil {
		return nil, err
	}
	if err := stageFolder(outs, dest, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// stageFolder stages in outs the files out writes under dest.out: each of its figures in
// every chart format, then its folder's other files, with the folder's manifest
// (stageOutFiles). --out "" writes no files.
func stageFolder(outs *outputSet, dest destination, out output) error {
	if dest.out == "" {
		return nil
	}
	var files []outFile
	if out.Figures != nil && len(dest.charts) > 0 {
		figs, err := out.Figures()
		if err != nil {
			return err
		}
		for _, fig := range figs {
			drawn, err := drawFigure(fig, dest.charts, out.FigureDir, nil)
			if err != nil {
				return err
			}
			files = append(files, drawn...)
		}
	}
	if out.Folder != nil {
		more, err := out.Folder(dest.charts)
		if err != nil {
			return err
		}
		files = append(files, more...)
	}
	return stageOutFiles(outs, dest.out, files)
}

// drawFigure renders fig in each format, in memory, as the files dir/NAME.FORMAT in the
// order of formats; drawing, when not nil, is told of each file before it is drawn.
func drawFigure(fig *chart.Figure, formats []string, dir string, drawing func(path string)) ([]outFile, error) {
	files := make([]outFile, 0, len(formats))
	for _, format := range formats {
		path := filepath.Join(dir, fig.Name+"."+format)
		if drawing != nil {
			drawing(path)
		}
		var b bytes.Buffer
		if err := fig.Render(&b, format); err != nil {
			return nil, fmt.Errorf("chart %s: %w", path, err)
		}
		files = append(files, outFile{path: path, data: b.Bytes()})
	}
	return files, nil
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
