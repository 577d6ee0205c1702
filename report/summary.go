package report

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// overTolerance is how far above 1.00 over_admission may be before a finding calls it a
// broken promise: the two-counter estimate and the buckets can overshoot by a request or
// two through rounding, which is not what a reader should be warned about.
const overTolerance = 0.005

// Findings are the sentences that say what one report's table shows: who broke the promise
// and by how much, who refused what the limit allowed, and what state costs. They are
// computed from the numbers, in a fixed order, so the same report gives the same words.
func Findings(r *Report) []string {
	if len(r.Results) == 0 {
		return []string{"No algorithm ran."}
	}
	window := time.Duration(r.Policy.Window)
	var out []string

	over := slices.Clone(r.Results)
	over = slices.DeleteFunc(over, func(x Result) bool { return x.OverAdmission <= 1+overTolerance })
	slices.SortStableFunc(over, func(a, b Result) int { return -cmp.Compare(a.OverAdmission, b.OverAdmission) })
	if len(over) == 0 {
		out = append(out, fmt.Sprintf("Every algorithm kept the promise: no trailing %s window held more than the limit of %d.", window, r.Policy.Limit))
	} else {
		var parts []string
		for _, x := range over {
			parts = append(parts, fmt.Sprintf("%s %.2f× (%d)", ResultName(x), x.OverAdmission, x.PeakWindowAdmitted))
		}
		out = append(out, fmt.Sprintf("Over the limit of %d in some trailing %s window: %s.", r.Policy.Limit, window, strings.Join(parts, ", ")))
	}

	rejects := slices.Clone(r.Results)
	rejects = slices.DeleteFunc(rejects, func(x Result) bool { return x.FalseReject == 0 })
	slices.SortStableFunc(rejects, func(a, b Result) int { return -cmp.Compare(a.FalseRejectRate, b.FalseRejectRate) })
	if len(rejects) == 0 {
		out = append(out, "No algorithm refused a request that the limit allowed.")
	} else {
		var parts []string
		for _, x := range rejects {
			parts = append(parts, fmt.Sprintf("%s %s (%d requests)", ResultName(x), Percent(x.FalseRejectRate), x.FalseReject))
		}
		out = append(out, fmt.Sprintf("Refused although the limit allowed them (false rejects): %s.", strings.Join(parts, ", ")))
	}

	var lo, hi Result
	counted := false // a limiter whose state rlsim cannot count takes no part
	for _, x := range r.Results {
		if x.StateBytesUnknown {
			continue
		}
		if !counted || x.StateBytesPerKey > hi.StateBytesPerKey {
			hi = x
		}
		if !counted || x.StateBytesPerKey < lo.StateBytesPerKey {
			lo = x
		}
		counted = true
	}
	if counted && lo.StateBytesPerKey > 0 && hi.StateBytesPerKey > lo.StateBytesPerKey {
		out = append(out, fmt.Sprintf("Memory per key ranges from %.0f bytes (%s) to %.0f bytes (%s), %.0f× as much.",
			lo.StateBytesPerKey, lo.Algorithm, hi.StateBytesPerKey, hi.Algorithm, hi.StateBytesPerKey/lo.StateBytesPerKey))
	}
	return out
}

// ChartFile is a chart written beside a report, as summaries and the index link it.
type ChartFile struct {
	// Name is the file name inside the scenario's folder ("window-timeline.svg").
	Name string
	// Title says what the chart shows.
	Title string
}

// WriteTimelineCSV writes every algorithm's timeline of r, one row per algorithm and bin:
// algorithm,bin_start_s,bin_s,admitted,refused,window_admitted.
func WriteTimelineCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"algorithm", "bin_start_s", "bin_s", "admitted", "refused", "window_admitted"}); err != nil {
		return err
	}
	for _, x := range r.Results {
		tl := x.Timeline
		if tl == nil {
			continue
		}
		binS := strconv.FormatFloat(tl.Bin.Seconds(), 'g', -1, 64)
		for i := range tl.Admitted {
			if err := cw.Write([]string{
				ResultName(x), // algorithm@variant for a fleet
				strconv.FormatFloat((time.Duration(i) * tl.Bin).Seconds(), 'g', -1, 64),
				binS,
				strconv.FormatInt(tl.Admitted[i], 10),
				strconv.FormatInt(tl.Refused[i], 10),
				strconv.FormatInt(tl.WindowAdmitted[i], 10),
			}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
