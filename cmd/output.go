package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

// parseCharts reads --charts: "none", or formats from chart.Formats separated by commas.
func parseCharts(s string) ([]string, error) {
	if s == "none" || s == "" {
		return nil, nil
	}
	var formats []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(chart.Formats, f) {
			return nil, usagef("--charts: unknown chart format %q (want png, svg, png,svg or none)", f)
		}
		if !slices.Contains(formats, f) {
			formats = append(formats, f)
		}
	}
	return formats, nil
}

// outFile is one file of the results folder, rendered before anything is written.
type outFile struct {
	path string
	data []byte
}

// stageResults stages in outs the results folder for reports (resultsFolder), as
// stageFolder stages every command's: a replay's reports, whose stdout is written apart.
func stageResults(outs *outputSet, dir string, formats []string, reports []*report.Report, drawing func(index, file, files int, name string)) error {
	return stageFolder(outs, destination{out: dir, charts: formats}, output{Folder: resultsFolder(reports, drawing)})
}

// resultsFolder is the results folder of reports, for output.Folder: per scenario
// results.json, results.csv, timeline.csv, summary.md and the charts in each format, and
// index.html over them all. Everything is rendered in memory first; the files replace
// their old versions only when the output set they are staged in commits, so a run that
// fails leaves the previous results as they were. drawing, when not nil, is told of each
// file before it is drawn (see progress.drawing).
func resultsFolder(reports []*report.Report, drawing func(index, file, files int, name string)) func([]string) ([]outFile, error) {
	return func(formats []string) ([]outFile, error) { return renderResults(formats, reports, drawing) }
}

// manifestName is the file, in a results folder, that lists the files the run that wrote
// the folder wrote there, one path (relative, with slashes) a line.
const manifestName = ".rlsim-manifest"

// stageOutFiles stages rendered files under dir in outs, with the manifest of what the
// run writes there. The files the manifest of the run before lists, and this run does not
// write, are removed when outs commits, so that the folder holds one run's results and
// its index.html lists exactly what is there. Only files an earlier manifest lists are
// ever removed: anything else in the folder (a user's notes, results of a version of
// rlsim that wrote no manifest) stays.
func stageOutFiles(outs *outputSet, dir string, files []outFile) error {
	if dir == "" || len(files) == 0 {
		return nil // no folder, or nothing for it: whatever is there stays as it is
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, filepath.ToSlash(f.path))
	}
	slices.Sort(names)
	writing := map[string]bool{manifestName: true}
	for _, n := range names {
		writing[n] = true
	}
	if old, err := os.ReadFile(filepath.Join(dir, manifestName)); err == nil {
		for _, line := range strings.Split(string(old), "\n") {
			rel := filepath.Clean(filepath.FromSlash(strings.TrimSpace(line)))
			if line == "" || writing[filepath.ToSlash(rel)] || filepath.IsAbs(rel) || rel == "." || rel == ".." ||
				strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				continue
			}
			outs.stale = append(outs.stale, filepath.Join(dir, rel))
		}
		outs.root = filepath.Clean(dir)
	}
	files = append(files, outFile{path: manifestName, data: []byte(strings.Join(names, "\n") + "\n")})
	for _, f := range files {
		path := filepath.Join(dir, f.path)
		if err := outs.mkdirAll(filepath.Dir(path)); err != nil {
			return fmt.Errorf("--out %s: %w", dir, err)
		}
		if err := outs.add(path, f.data); err != nil {
			return err
		}
	}
	return nil
}

func renderResults(formats []string, reports []*report.Report, drawing func(index, file, files int, name string)) ([]outFile, error) {
	var files []outFile
	var pages []render.IndexPage
	used := map[string]bool{"index.html": true}
	for i, r := range reports {
		dir := folderName(r.Scenario, used)
		var figs []*chart.Figure
		if len(formats) > 0 {
			figs = render.Figures(r)
		}
		const tables = 4 // results.json, results.csv, timeline.csv, summary.md
		count, done := len(figs)*len(formats)+tables, 0
		before := func(path string) {
			if drawing != nil {
				drawing(i, done, count, path)
			}
			done++
		}
		add := func(name string, render func(io.Writer) error) ([]byte, error) {
			before(dir + "/" + name)
			var b bytes.Buffer
			if err := render(&b); err != nil {
				return nil, fmt.Errorf("scenario %s: %s: %w", r.Scenario, name, err)
			}
			files = append(files, outFile{path: dir + "/" + name, data: b.Bytes()})
			return b.Bytes(), nil
		}
		page := render.IndexPage{Report: r, Dir: dir}
		for _, fig := range figs {
			drawn, err := drawFigure(fig, formats, dir, before)
			if err != nil {
				return nil, fmt.Errorf("scenario %s: %w", r.Scenario, err)
			}
			files = append(files, drawn...)
			// Link one file per chart: the SVG when there is one, it scales.
			var linked report.ChartFile
			for _, format := range formats {
				if format == "svg" || linked.Name == "" {
					linked = report.ChartFile{Name: fig.Name + "." + format, Title: fig.Meta.Title}
				}
			}
			page.Charts = append(page.Charts, linked)
		}
		linked := page.Charts
		steps := []struct {
			name   string
			render func(io.Writer) error
		}{
			{"results.json", func(w io.Writer) error { return report.WriteJSON(w, r) }},
			{"results.csv", func(w io.Writer) error { return report.WriteCSV(w, []*report.Report{r}) }},
			{"timeline.csv", func(w io.Writer) error { return report.WriteTimelineCSV(w, r) }},
			{"summary.md", func(w io.Writer) error { return render.WriteSummary(w, r, linked) }},
		}
		for _, s := range steps {
			if _, err := add(s.name, s.render); err != nil {
				return nil, err
			}
		}
		pages = append(pages, page)
	}
	var b bytes.Buffer
	if err := render.WriteIndex(&b, pages); err != nil {
		return nil, fmt.Errorf("index.html: %w", err)
	}
	files = append(files, outFile{path: "index.html", data: b.Bytes()})
	return files, nil
}

// folderName turns a scenario name into a folder name that stays inside the results
// folder (letters, digits, '.', '_' and '-' only, not starting with a dot) and differs
// from the names already used in this run.
func folderName(scenario string, used map[string]bool) string {
	var b strings.Builder
	for _, r := range scenario {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), ".")
	if name == "" {
		name = "scenario"
	}
	base := name
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	used[name] = true
	return name
}
