package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// ReplayLog is what a replay read of its log: how many lines, how many it replayed and
// why it skipped the others, the span of time they cover, and how it placed requests whose
// times have whole seconds only. The JSON names are the contract of a replay's results.
type ReplayLog struct {
	File   string `json:"file"`
	Format string `json:"format"`
	// Lines counts the lines read (blank ones too, a header not); Used those replayed.
	Lines int `json:"lines_read"`
	Used  int `json:"lines_used"`
	// Unreadable lines could not be read as the format; OutOfOrder ones were further out
	// of order than ReorderWindow; OtherShards belong to other shards' keys.
	Unreadable  int `json:"unreadable"`
	OutOfOrder  int `json:"out_of_order"`
	OtherShards int `json:"other_shards,omitempty"`
	// From and To are the earliest and latest arrival read (of every shard), RFC 3339.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// ReorderWindow is how far out of order a line may be and still be put in its place.
	ReorderWindow Duration `json:"reorder_window"`
	// WholeSeconds counts the lines replayed whose times had whole seconds only, placed
	// inside their second by the rule Placement.
	WholeSeconds int    `json:"whole_seconds"`
	Placement    string `json:"placement"`
	// PlacementEffect says what the rule can change, when WholeSeconds is not zero.
	PlacementEffect string `json:"placement_effect,omitempty"`
	// Shard is "K/N" for a shard's run.
	Shard string `json:"shard,omitempty"`
}

// Skipped is every line read and not replayed.
func (l *ReplayLog) Skipped() int { return l.Unreadable + l.OutOfOrder + l.OtherShards }

// Span is the time from the first arrival to the last.
func (l *ReplayLog) Span() time.Duration {
	from, err1 := time.Parse(time.RFC3339Nano, l.From)
	to, err2 := time.Parse(time.RFC3339Nano, l.To)
	if err1 != nil || err2 != nil {
		return 0
	}
	return to.Sub(from)
}

// String is the line a replay's table opens with: lines read, used, skipped by reason,
// and the span.
func (l *ReplayLog) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d lines read, %d used", filepath.Base(l.File), l.Lines, l.Used)
	var why []string
	for _, r := range []struct {
		n    int
		what string
	}{{l.Unreadable, "unreadable"}, {l.OutOfOrder, fmt.Sprintf("out of order beyond %s", time.Duration(l.ReorderWindow))}, {l.OtherShards, "other shards' keys"}} {
		if r.n > 0 {
			why = append(why, fmt.Sprintf("%d %s", r.n, r.what))
		}
	}
	fmt.Fprintf(&b, ", %d skipped", l.Skipped())
	if len(why) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(why, ", "))
	}
	if from, err := time.Parse(time.RFC3339Nano, l.From); err == nil {
		to, _ := time.Parse(time.RFC3339Nano, l.To)
		end := to.Format("2006-01-02 15:04:05.999999999")
		if to.YearDay() == from.YearDay() && to.Year() == from.Year() {
			end = to.Format("15:04:05.999999999")
		}
		fmt.Fprintf(&b, "; %s to %s UTC (%s)", from.Format("2006-01-02 15:04:05.999999999"), end, l.Span())
	}
	if l.Shard != "" {
		fmt.Fprintf(&b, "; shard %s", l.Shard)
	}
	return b.String()
}

// PlacementNote is the sentence under a replay's table saying how requests of whole
// seconds were placed, or "" when the log had none.
func (l *ReplayLog) PlacementNote() string {
	if l.WholeSeconds == 0 {
		return ""
	}
	return fmt.Sprintf("%d lines had whole-second times, placed by the rule %q (--subsecond): %s.", l.WholeSeconds, l.Placement, l.PlacementEffect)
}
