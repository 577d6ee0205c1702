package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
)

func sampleReport() *report.Report {
	return &report.Report{
		Scenario: "sample", Description: "a sample", Seed: 7, Key: "user",
		Policy: report.Policy{Limit: 100, Window: report.Duration(time.Minute), Burst: 100},
		Results: []report.Result{
			{Algorithm: "fixed-window", Requests: 200, Admitted: 200, PeakWindowAdmitted: 200, OverAdmission: 2, StateBytesPerKey: 16},
			{Algorithm: "sliding-window", Requests: 200, Admitted: 99, PeakWindowAdmitted: 100, OverAdmission: 1.004, FalseReject: 3, FalseRejectRate: 0.015, StateBytesPerKey: 24},
			{Algorithm: "sliding-log", Requests: 200, Admitted: 100, PeakWindowAdmitted: 100, OverAdmission: 1, StateBytesPerKey: 2096},
		},
	}
}

func TestIndexEscapesWhatScenarioFilesSay(t *testing.T) {
	r := sampleReport()
	r.Scenario = `<script>alert("x")</script>`
	r.Description = `<img src=x onerror=alert(1)>`
	var b bytes.Buffer
	if err := WriteIndex(&b, []IndexPage{{Report: r, Dir: "scenario"}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<img src=x"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html carries %q from the scenario file unescaped", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Error("the scenario name is missing from the page")
	}
}

func TestSummaryMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummary(&b, sampleReport(), []report.ChartFile{{Name: "window-timeline.svg", Title: "window"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# sample\n\na sample\n", "`rlsim compare --scenario sample --seed 7`", "| fixed-window | 200 | 200 |",
		"- Over the limit of 100", "![window](window-timeline.svg)", "[results.json](results.json)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// A user's limiter, whose state lives outside rlsim, is left out of the memory chart (a
// zero bar would say it costs nothing) and named in its caption instead.
func TestMemoryFigureLeavesOutUncountedLimiters(t *testing.T) {
	r := &report.Report{Scenario: "s", Policy: report.Policy{Limit: 100, Window: report.Duration(time.Minute), Burst: 100}, Results: []report.Result{
		{Algorithm: "gcra", StateBytesPerKey: 16},
		{Algorithm: "my_limiter", StateBytesUnknown: true},
		{Algorithm: "sliding-log", StateBytesPerKey: 900},
	}}
	var memory *chart.Figure
	for _, f := range Figures(r) {
		if f.Name == "memory" {
			memory = f
		}
	}
	if memory == nil {
		t.Fatal("no memory figure")
	}
	bars := memory.Panels[0].(chart.BarPanel)
	if strings.Join(bars.Categories, ",") != "gcra,sliding-log" || len(bars.Series[0].Values) != 2 || len(bars.Series[1].Values) != 2 {
		t.Errorf("memory bars %v %+v", bars.Categories, bars.Series)
	}
	if !strings.Contains(memory.Meta.Caption, "Not drawn: my_limiter") {
		t.Errorf("caption %q", memory.Meta.Caption)
	}
}
