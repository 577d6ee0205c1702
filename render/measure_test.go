package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/traffic"
)

// fakeLimiter admits what its script says, so the collector's arithmetic is tested alone.
type fakeLimiter struct{}

func (fakeLimiter) Name() string { return "fake" }

func (fakeLimiter) Allow(uint32, int64, int64) algorithms.Decision { return algorithms.Decision{} }

func (fakeLimiter) Keys() int { return 2 }

func (fakeLimiter) StateBytes() int64 { return 48 }

const sec = int64(time.Second)

// uncountedLimiter keeps its state where rlsim cannot count it, as a user's script does.
type uncountedLimiter struct{ fakeLimiter }

func (uncountedLimiter) StateBytes() int64 { return -1 }

func TestStateNotHereIsNotCountedAsZero(t *testing.T) {
	c := report.NewCollector(1, time.Minute, time.Second)
	c.Observe(0, 0, 1, traffic.Legit, algorithms.Decision{Allowed: true})
	own, builtin := c.Result(uncountedLimiter{}), c.Result(fakeLimiter{})
	if !own.StateBytesUnknown || own.StateBytesPerKey != 0 || builtin.StateBytesUnknown || builtin.StateBytesPerKey != 24 {
		t.Fatalf("uncounted %+v / counted %+v", own, builtin)
	}
	own.Algorithm, builtin.Algorithm = "mine", "fake"
	r := &report.Report{Scenario: "s", Results: []report.Result{builtin, own}}
	tab := ResultsTable(r, report.Columns{Names: []string{"state_bytes_per_key"}})
	if got := [][]string{tab.Rows[0][1:], tab.Rows[1][1:]}; got[0][0] != "24" || got[1][0] != "-" {
		t.Fatalf("bytes per key cells %q, want 24 and -", got)
	}
	var csv strings.Builder
	if err := report.WriteCSV(&csv, []*report.Report{r}); err != nil {
		t.Fatal(err)
	}
	col := slices.Index(report.CSVColumns, "state_bytes_per_key")
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if cells := strings.Split(lines[1], ","); cells[col] != "24" {
		t.Fatalf("counted row's cell %q", cells[col])
	}
	if cells := strings.Split(lines[2], ","); cells[col] != "" {
		t.Fatalf("uncounted row's cell %q, want it empty", cells[col])
	}
	// One layer whose state is not here makes the layered row unknown, not smaller.
	layered := &report.Layered{Outcome: report.NewOutcomeCollector(time.Second), Cells: [][]report.LayerCell{
		{{Collector: report.NewCollector(1, time.Minute, time.Second), Limiter: uncountedLimiter{}}},
		{{Collector: report.NewCollector(1, time.Minute, time.Second), Limiter: fakeLimiter{}}},
	}}
	if x := layered.Result("both"); !x.StateBytesUnknown || x.StateBytesPerKey != 0 {
		t.Fatalf("layered row %+v", x)
	}
	layered.Cells = layered.Cells[1:]
	if x := layered.Result("one"); x.StateBytesUnknown || x.StateBytesPerKey != 24 {
		t.Fatalf("counted layered row %+v", x)
	}
}
