package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// RetryResult is one algorithm and retry strategy on a scenario's clients section: how
// closed-loop clients that retry fared. The JSON names follow DESIGN.md's retry metrics.
type RetryResult struct {
	Algorithm string `json:"algorithm"`
	Strategy  string `json:"strategy"`
	Clients   int    `json:"clients"`
	Runs      int    `json:"runs"`
	// CallsMean is the mean number of attempts per run.
	CallsMean float64 `json:"calls_mean"`
	// CompletionMSMean is the mean time to drain: until the last client finished, in ms.
	CompletionMSMean float64 `json:"completion_ms_mean"`
	// PeakArrivals is the mean over runs of the most retries (attempts after the first try
	// of a request) reaching the server in one bin of Bin: the highest retry wave. The
	// clients' first requests, which leave together by the scenario's premise, are not
	// counted.
	PeakArrivals float64 `json:"peak_arrivals"`
	// WaveHeights are the heights of the first run's retry waves, in time order (runs of
	// bins holding at least WaveThreshold retries each).
	WaveHeights   []int64  `json:"wave_heights"`
	WaveThreshold int64    `json:"wave_threshold"`
	Bin           Duration `json:"bin"`
	GiveUps       float64  `json:"give_ups"`
	Duplicates    float64  `json:"duplicates"`
	// RetryAfterRefusedShare is the share of retries timed by Retry-After that the limit
	// refused again; null when Retry-After timed none.
	RetryAfterRefusedShare *float64 `json:"retry_after_refused_share"`
	// Arrivals is the first run's retries per bin of Bin, from t=0 (the series the herd
	// chart draws); not part of the JSON.
	Arrivals []int64 `json:"-"`
}

// maxWavesShown bounds the wave heights a table cell lists.
const maxWavesShown = 8

// RetriesTable is the human table of a report's retry results.
func RetriesTable(r *Report) Table {
	t := Table{
		Title: fmt.Sprintf("%s — clients retrying, seed %d", r.Scenario, r.Seed),
		Header: []string{"algorithm", "strategy", "clients", "runs", "calls_mean", "completion_ms_mean",
			"peak_arrivals", "waves", "wave_heights", "give_ups", "duplicates", "retry_after_refused_share"},
	}
	for _, x := range r.Retries {
		heights := make([]string, 0, maxWavesShown+1)
		for i, h := range x.WaveHeights {
			if i == maxWavesShown {
				heights = append(heights, "…")
				break
			}
			heights = append(heights, strconv.FormatInt(h, 10))
		}
		share := "-"
		if x.RetryAfterRefusedShare != nil {
			share = percent(*x.RetryAfterRefusedShare)
		}
		t.Rows = append(t.Rows, []string{
			x.Algorithm, x.Strategy, strconv.Itoa(x.Clients), strconv.Itoa(x.Runs),
			strconv.FormatFloat(x.CallsMean, 'f', 1, 64), strconv.FormatFloat(x.CompletionMSMean, 'f', 1, 64),
			strconv.FormatFloat(x.PeakArrivals, 'f', 1, 64), strconv.Itoa(len(x.WaveHeights)), strings.Join(heights, " "),
			strconv.FormatFloat(x.GiveUps, 'f', 2, 64), strconv.FormatFloat(x.Duplicates, 'f', 2, 64), share,
		})
	}
	if len(r.Retries) > 0 {
		x := r.Retries[0]
		t.Notes = append(t.Notes, fmt.Sprintf("peak_arrivals: most retries in one %s bin (mean over runs); waves: runs of bins with at least %d retries each (first run); completion is the time to drain",
			time.Duration(x.Bin), x.WaveThreshold))
	}
	return t
}

// retryCSVColumns are the machine columns of the retries CSV.
var retryCSVColumns = []string{
	"scenario", "seed", "algorithm", "strategy", "clients", "runs", "calls_mean", "completion_ms_mean",
	"peak_arrivals", "waves", "wave_heights", "wave_threshold", "bin", "give_ups", "duplicates",
	"retry_after_refused_share",
}

// WriteRetriesCSV writes the retry results of every report as one CSV with a header row;
// wave_heights is a space-separated list.
func WriteRetriesCSV(w io.Writer, reports []*Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(retryCSVColumns); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range reports {
		for _, x := range r.Retries {
			heights := make([]string, len(x.WaveHeights))
			for i, h := range x.WaveHeights {
				heights[i] = strconv.FormatInt(h, 10)
			}
			share := ""
			if x.RetryAfterRefusedShare != nil {
				share = f(*x.RetryAfterRefusedShare)
			}
			if err := cw.Write([]string{
				r.Scenario, strconv.FormatUint(r.Seed, 10), x.Algorithm, x.Strategy, strconv.Itoa(x.Clients), strconv.Itoa(x.Runs),
				f(x.CallsMean), f(x.CompletionMSMean), f(x.PeakArrivals), strconv.Itoa(len(x.WaveHeights)),
				strings.Join(heights, " "), strconv.FormatInt(x.WaveThreshold, 10), time.Duration(x.Bin).String(),
				f(x.GiveUps), f(x.Duplicates), share,
			}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
