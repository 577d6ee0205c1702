package report

import (
	"bytes"
	"html/template"
	"io"
	"strings"
)

// IndexPage is one scenario's section of index.html.
type IndexPage struct {
	Report *Report
	// Dir is the scenario's folder, relative to index.html.
	Dir string
	// Charts are the charts in Dir; an SVG is embedded in the page, any other format linked.
	Charts []IndexChart
}

// IndexChart is one chart of a scenario.
type IndexChart struct {
	ChartFile
	// SVG is the chart's SVG document to embed; empty when it was written only as PNG.
	SVG []byte
}

// inlineSVG strips what may not appear inside HTML (the XML declaration and gonum's
// generator comment) so the document can be embedded as is.
func inlineSVG(svg []byte) template.HTML {
	s := string(svg)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	// gonum sizes the document in points; let the page scale it to its column.
	s = strings.Replace(s, "<svg ", `<svg class="chart" `, 1)
	// Safe to insert raw: the document comes from our own renderer, which escapes every text.
	return template.HTML(s)
}

type indexChartView struct {
	Title, Href string
	SVG         template.HTML
}

type indexPageView struct {
	Name, Dir, Description, Caption string
	Findings                        []string
	Retries                         bool
	Tables                          []Table
	Charts                          []indexChartView
}

// WriteIndex writes index.html: a static page (no script, nothing fetched from the
// network) that lists every scenario and shows its tables, findings and charts.
func WriteIndex(w io.Writer, pages []IndexPage) error {
	views := make([]indexPageView, 0, len(pages))
	for _, p := range pages {
		v := indexPageView{
			Name:        p.Report.Scenario,
			Dir:         p.Dir,
			Description: p.Report.Description,
			Caption:     Caption(p.Report),
			Findings:    AllFindings(p.Report),
			Retries:     len(p.Report.Retries) > 0,
		}
		for _, t := range Tables(p.Report) {
			t = dropEmptyColumns(t)
			t.Title = ""
			v.Tables = append(v.Tables, t)
		}
		for _, c := range p.Charts {
			cv := indexChartView{Title: c.Title, Href: p.Dir + "/" + c.Name}
			if len(c.SVG) > 0 {
				cv.SVG = inlineSVG(c.SVG)
			}
			v.Charts = append(v.Charts, cv)
		}
		views = append(views, v)
	}
	var buf bytes.Buffer
	if err := indexTemplate.Execute(&buf, views); err != nil {
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
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2.2em; border-bottom: 1px solid #ccc; padding-bottom: .2em; }
nav ul { columns: 2; } nav li { break-inside: avoid; } .wide { overflow-x: auto; } .caption { color: #555; font-size: .9em; }
table { border-collapse: collapse; font-size: .85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: .25em .5em; } td { text-align: right; } td:first-child { text-align: left; }
th { background: #f2f2f2; }
figure { margin: 1.5em 0; } figcaption { font-size: .9em; color: #444; }
svg.chart { width: 100%; height: auto; display: block; }
</style>
</head>
<body>
<h1>rlsim results</h1>
<p>Every algorithm measured against the exact promise "no more than the limit in any trailing window". Over-admission above 1.00 means the promise was broken; a false reject is a request refused that the promise allowed.</p>
<nav><ul>
{{- range .}}
<li><a href="#{{.Name}}">{{.Name}}</a>{{if .Description}} — {{.Description}}{{end}}</li>
{{- end}}
</ul></nav>
{{- range .}}
<section id="{{.Name}}">
<h2>{{.Name}}</h2>
{{- if .Description}}
<p>{{.Description}}</p>
{{- end}}
<p class="caption">{{.Caption}}</p>
{{- range .Tables}}
<div class="wide"><table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- end}}
<ul>
{{- range .Findings}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- range .Charts}}
<figure>
{{- if .SVG}}
{{.SVG}}
{{- else}}
<img src="{{.Href}}" alt="{{.Title}}" style="max-width:100%">
{{- end}}
<figcaption>{{.Title}} (<a href="{{.Href}}">{{.Href}}</a>)</figcaption>
</figure>
{{- end}}
<p>Files: <a href="{{.Dir}}/summary.md">summary.md</a>, <a href="{{.Dir}}/results.json">results.json</a>, <a href="{{.Dir}}/results.csv">results.csv</a>, <a href="{{.Dir}}/timeline.csv">timeline.csv</a>{{if .Retries}}, <a href="{{.Dir}}/retries.csv">retries.csv</a>{{end}}</p>
</section>
{{- end}}
</body>
</html>
`))
