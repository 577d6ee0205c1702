package render

import (
	"bytes"
	"html/template"
	"io"
	"strings"

	"github.com/rlsim/rlsim/report"
)

// IndexPage is one scenario's section of index.html.
type IndexPage struct {
	Report *report.Report
	// Dir is the scenario's folder, relative to index.html.
	Dir string
	// Charts are the chart files in Dir, shown as images and linked.
	Charts []report.ChartFile
}

type indexChartView struct {
	Title, Href string
}

type indexTableView struct {
	Header []template.HTML
	Rows   [][]string
}

type indexPageView struct {
	Name, Dir, Description, Caption string
	Findings                        []string
	Tables                          []indexTableView
	Charts                          []indexChartView
}

type indexCellView struct {
	Class, Ratio, Cost, Href, Title string
}

type indexGroupView struct {
	Label string
	Rows  []struct {
		Scenario, Href string
		Cells          []indexCellView
	}
}

type indexBlockView struct {
	Algorithms []string
	Groups     []indexGroupView
	// Span is the number of columns: the scenario's and one per algorithm.
	Span int
}

type indexFindingView struct {
	Scenario, Href, Text string
}

type indexView struct {
	Blocks    []indexBlockView
	RetryOnly []indexFindingView
	Findings  []indexFindingView
	Pages     []indexPageView
}

// headerHTML escapes a table header and keeps its line breaks.
func headerHTML(h string) template.HTML {
	return template.HTML(strings.ReplaceAll(template.HTMLEscapeString(h), "\n", "<br>"))
}

// WriteIndex writes index.html: a static page (no script, nothing fetched from the
// network) that opens with the verdict — the scenario × algorithm matrix, red where the
// promise broke, each cell linking to its scenario — and then shows every scenario's
// tables, findings and charts. The charts are linked files, not embedded, so the page
// stays small whatever the run.
func WriteIndex(w io.Writer, pages []IndexPage) error {
	reports := make([]*report.Report, len(pages))
	anchors := map[string]string{}
	for i, p := range pages {
		reports[i] = p.Report
		anchors[p.Report.Scenario] = "#" + p.Dir
	}
	verdict := report.NewVerdict(reports)
	var view indexView
	for _, b := range verdict.Blocks {
		bv := indexBlockView{Algorithms: b.Algorithms, Span: len(b.Algorithms) + 1}
		for _, g := range b.Groups {
			gv := indexGroupView{Label: g.Label()}
			for _, r := range g.Rows {
				row := struct {
					Scenario, Href string
					Cells          []indexCellView
				}{Scenario: r.Scenario, Href: anchors[r.Scenario]}
				for i, c := range r.Cells {
					cv := indexCellView{Class: "none", Ratio: c.Ratio(), Cost: c.Cost, Href: anchors[r.Scenario],
						Title: r.Scenario + ", " + b.Algorithms[i]}
					switch {
					case !c.Ran:
						cv.Title += ": not run"
					case c.Beyond:
						cv.Class, cv.Ratio = "broke", report.BrokeMark+" "+cv.Ratio
						cv.Title += ": the promise broke, and the algorithm's own bound"
					case c.Broke:
						cv.Class, cv.Ratio = "bydesign", report.ByDesignMark+" "+cv.Ratio
						cv.Title += ": above the promise, within the algorithm's own bound"
					default:
						cv.Class = "kept"
						cv.Title += ": the promise held"
					}
					row.Cells = append(row.Cells, cv)
				}
				gv.Rows = append(gv.Rows, row)
			}
			bv.Groups = append(bv.Groups, gv)
		}
		view.Blocks = append(view.Blocks, bv)
	}
	for _, s := range verdict.RetryOnly {
		view.RetryOnly = append(view.RetryOnly, indexFindingView{Scenario: s, Href: anchors[s]})
	}
	for _, f := range verdict.Findings {
		view.Findings = append(view.Findings, indexFindingView{Scenario: f.Scenario, Href: anchors[f.Scenario], Text: f.Text})
	}
	for _, p := range pages {
		v := indexPageView{
			Name:        p.Report.Scenario,
			Dir:         p.Dir,
			Description: p.Report.Description,
			Caption:     report.Caption(p.Report),
			Findings:    report.AllFindings(p.Report),
		}
		for _, t := range Tables(p.Report, report.Columns{}) {
			t = report.DropEmptyColumns(t)
			tv := indexTableView{Rows: t.Rows}
			for _, h := range t.Header {
				tv.Header = append(tv.Header, headerHTML(h))
			}
			v.Tables = append(v.Tables, tv)
		}
		for _, c := range p.Charts {
			v.Charts = append(v.Charts, indexChartView{Title: c.Title, Href: p.Dir + "/" + c.Name})
		}
		view.Pages = append(view.Pages, v)
	}
	var buf bytes.Buffer
	if err := indexTemplate.Execute(&buf, view); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

var indexTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rlsim results</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: .3em; } h2 { margin-top: 2.2em; border-bottom: 1px solid #ccc; padding-bottom: .2em; }
.caption { color: #555; font-size: .9em; }
table { border-collapse: collapse; font-size: .85em; margin: 1em 0; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: .25em .5em; } td { text-align: right; white-space: nowrap; } td:first-child { text-align: left; }
th { background: #f2f2f2; font-weight: 600; }
table.verdict td, table.verdict th { padding: .3em .6em; }
table.verdict th.group { text-align: left; background: #fff; font-weight: normal; font-style: italic; color: #444; padding-top: .7em; border-left: 0; border-right: 0; }
table.verdict td a { color: inherit; text-decoration: none; display: block; }
table.verdict td.broke { background: #f4c7c0; color: #7a1408; font-weight: 600; }
table.verdict td.bydesign { background: #fbe6b3; color: #5e4100; }
table.verdict td.kept { background: #d5ebd5; color: #1d4d1d; }
table.verdict td.none { background: #f7f7f7; color: #aaa; }
table.verdict .cost { font-weight: normal; opacity: .8; margin-left: .4em; }
.legend span { display: inline-block; padding: .1em .5em; margin-right: .5em; }
ul.findings li { margin: .25em 0; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; display: block; border: 1px solid #eee; }
figcaption { font-size: .9em; color: #444; }
</style>
</head>
<body>
<h1>rlsim results</h1>
<p>Did each algorithm keep its promise, at most the limit in any trailing window? A cell: the busiest window over the limit (above 1.00 the promise broke), then the cost its group names; it links to its scenario.</p>
<p class="legend"><span style="background:#f4c7c0;color:#7a1408">✗ beyond the algorithm's own documented bound (or it states none)</span><span style="background:#fbe6b3;color:#5e4100">~ above the promise, within the algorithm's own bound: by design</span><span style="background:#d5ebd5;color:#1d4d1d">the promise held</span><span style="background:#f7f7f7;color:#999">not run</span></p>
{{- range .Blocks}}
<table class="verdict">
<thead><tr><th>scenario</th>{{range .Algorithms}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- $span := .Span}}
{{- range .Groups}}
<tr><th class="group" colspan="{{$span}}">{{.Label}}</th></tr>
{{- range .Rows}}
<tr><td><a href="{{.Href}}">{{.Scenario}}</a></td>{{range .Cells}}<td class="{{.Class}}" title="{{.Title}}"><a href="{{.Href}}">{{.Ratio}}{{if .Cost}}<span class="cost">{{.Cost}}</span>{{end}}</a></td>{{end}}</tr>
{{- end}}
{{- end}}
</tbody>
</table>
{{- end}}
{{- if .RetryOnly}}
<p>Clients retrying, no promise to judge: {{range $i, $s := .RetryOnly}}{{if $i}}, {{end}}<a href="{{$s.Href}}">{{$s.Scenario}}</a>{{end}}.</p>
{{- end}}
<ul class="findings">
{{- range .Findings}}
<li><a href="{{.Href}}">{{.Scenario}}</a>: {{.Text}}</li>
{{- end}}
</ul>
{{- range .Pages}}
<section id="{{.Dir}}">
<h2>{{.Name}}</h2>
{{- if .Description}}
<p>{{.Description}}</p>
{{- end}}
<p class="caption">{{.Caption}}</p>
{{- range .Tables}}
<table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- end}}
<ul>
{{- range .Findings}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- range .Charts}}
<figure>
<a href="{{.Href}}"><img src="{{.Href}}" alt="{{.Title}}" loading="lazy"></a>
<figcaption>{{.Title}} (<a href="{{.Href}}">{{.Href}}</a>)</figcaption>
</figure>
{{- end}}
<p>Files: <a href="{{.Dir}}/summary.md">summary.md</a>, <a href="{{.Dir}}/results.json">results.json</a>, <a href="{{.Dir}}/results.csv">results.csv</a>, <a href="{{.Dir}}/timeline.csv">timeline.csv</a></p>
</section>
{{- end}}
</body>
</html>
`))
