package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/report"
)

// A cell above the promise is marked by design while its peak stays within the
// algorithm's own bound (a token bucket of burst L: 2L in a window; a fixed window: 2L;
// a sliding log: L), and broken from one unit beyond it, or when the algorithm states no
// bound; in text, Markdown and the HTML matrix alike.
func TestVerdictMarksBeyondTheAlgorithmsOwnBound(t *testing.T) {
	policy := report.Policy{Limit: 100, Window: report.Duration(time.Minute), Burst: 100}
	for _, c := range []struct {
		alg    string
		peak   int64
		mark   string
		beyond bool
	}{
		{"token-bucket", 200, report.ByDesignMark, false},
		{"token-bucket", 201, report.BrokeMark, true},
		{"fixed-window", 200, report.ByDesignMark, false},
		{"fixed-window", 201, report.BrokeMark, true},
		{"sliding-log", 101, report.BrokeMark, true},
		{"sliding-log", 100, "", false},
		{"lua:./mine.lua", 150, report.BrokeMark, true},
	} {
		r := &report.Report{Scenario: "s", Policy: policy, Results: []report.Result{
			{Algorithm: c.alg, PeakWindowAdmitted: c.peak, OverAdmission: float64(c.peak) / 100},
			{Algorithm: "gcra", PeakWindowAdmitted: 100, OverAdmission: 1},
		}}
		v := report.NewVerdict([]*report.Report{r, {Scenario: "t", Policy: policy, Results: []report.Result{{Algorithm: "gcra", OverAdmission: 1}}}})
		cell := v.Blocks[0].Groups[0].Rows[0].Cells[slices.Index(v.Blocks[0].Algorithms, c.alg)]
		if cell.Mark() != c.mark || cell.Beyond != c.beyond {
			t.Errorf("%s at %d of 100: mark %q beyond %v, want %q %v", c.alg, c.peak, cell.Mark(), cell.Beyond, c.mark, c.beyond)
		}
		var text, md, html strings.Builder
		report.WriteVerdictText(&text, v, 100)
		report.WriteVerdictMarkdown(&md, v)
		if err := WriteIndex(&html, []IndexPage{{Report: r, Dir: "s"}}); err != nil {
			t.Fatal(err)
		}
		ratio := cell.Ratio()
		class := map[string]string{"": "kept", report.ByDesignMark: "bydesign", report.BrokeMark: "broke"}[c.mark]
		if !strings.Contains(text.String(), c.mark+ratio) || !strings.Contains(md.String(), c.mark+ratio) ||
			!strings.Contains(html.String(), `class="`+class+`" title="s, `+c.alg) {
			t.Errorf("%s at %d: mark %q or class %q missing:\n%s\n%s", c.alg, c.peak, c.mark, class, text.String(), md.String())
		}
	}
}

// A table too wide for its Width is split into parts that each fit and name the row.
func TestWriteTextSplitsATableWiderThanItsWidth(t *testing.T) {
	tb := report.Table{Header: []string{"algorithm", "one", "two", "three"}, Keys: 1, Width: 30,
		Rows: [][]string{{"sliding-window", "111111", "222222", "333333"}}}
	var b strings.Builder
	if err := WriteText(&b, tb); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if report.DisplayWidth(line) > 30 {
			t.Errorf("line of %d: %s", report.DisplayWidth(line), line)
		}
	}
	if n := strings.Count(b.String(), "sliding-window"); n != 3 || !strings.Contains(b.String(), "333333") {
		t.Errorf("want three parts naming the row:\n%s", b.String())
	}
}
