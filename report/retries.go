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
	// CompletionMSP50, CompletionMSP99 and CompletionMSMax are percentiles of each
	// client's time to finish its job, in ms: exact within a run, averaged over runs.
	CompletionMSP50 float64 `json:"completion_ms_p50"`
	CompletionMSP99 float64 `json:"completion_ms_p99"`
	CompletionMSMax float64 `json:"completion_ms_max"`
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
	// LoadPeak is the mean over runs of the most attempts of any kind in one bin.
	LoadPeak float64 `json:"load_peak"`
	// Requests is the mean number of requests a run the clients set out to make, and
	// Amplification the server's calls ÷ those requests.
	Requests      float64 `json:"requests"`
	Amplification float64 `json:"amplification"`
	// Wasted, Withheld, Failed and RetriedWrongly are means a run: calls that brought no
	// success, attempts a policy refused to send, jobs ended by a 4xx, retries of a 4xx.
	Wasted         float64 `json:"wasted"`
	Withheld       float64 `json:"withheld"`
	Failed         float64 `json:"failed"`
	RetriedWrongly float64 `json:"retried_wrongly"`
	// Capacity is the overloaded backend's capacity in requests per second (server:
	// overload); 0 otherwise.
	Capacity float64 `json:"capacity,omitempty"`
	// RetryAfterRefusedShare is the share of retries timed by Retry-After that the limit
	// refused again; null when Retry-After timed none.
	RetryAfterRefusedShare *float64 `json:"retry_after_refused_share"`
	// Arrivals is the first run's retries per bin of Bin, from t=0 (the series the herd
	// chart draws), Attempts its attempts of any kind (the load chart); not in the JSON.
	Arrivals, Attempts []int64 `json:"-"`
}

// maxWavesShown bounds the wave heights a table cell lists.
const maxWavesShown = 8

// RetriesTable is the human table of a report's retry results.
func RetriesTable(r *Report) Table {
	t := Table{
		Title: fmt.Sprintf("%s — clients retrying, seed %d", r.Scenario, r.Seed),
		Header: []string{"algorithm", "strategy", "clients", "runs", "calls_mean", "amplification", "completion_ms_mean",
			"peak_arrivals", "waves", "wave_heights", "give_ups", "withheld", "duplicates", "retry_after_refused_share"},
	}
	withheld := false
	for _, x := range r.Retries {
		withheld = withheld || x.Withheld != 0
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
		held := "-" // a column no strategy needs is dropped
		if withheld {
			held = strconv.FormatFloat(x.Withheld, 'f', 2, 64)
		}
		t.Rows = append(t.Rows, []string{
			x.Algorithm, x.Strategy, strconv.Itoa(x.Clients), strconv.Itoa(x.Runs),
			strconv.FormatFloat(x.CallsMean, 'f', 1, 64), strconv.FormatFloat(x.Amplification, 'f', 2, 64),
			strconv.FormatFloat(x.CompletionMSMean, 'f', 1, 64),
			strconv.FormatFloat(x.PeakArrivals, 'f', 1, 64), strconv.Itoa(len(x.WaveHeights)), strings.Join(heights, " "),
			strconv.FormatFloat(x.GiveUps, 'f', 2, 64), held, strconv.FormatFloat(x.Duplicates, 'f', 2, 64), share,
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
	"completion_ms_p50", "completion_ms_p99", "completion_ms_max", "load_peak", "requests", "amplification",
	"wasted", "withheld", "failed", "retried_wrongly", "capacity",
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
			capacity := ""
			if x.Capacity > 0 {
				capacity = f(x.Capacity)
			}
			if err := cw.Write([]string{
				r.Scenario, strconv.FormatUint(r.Seed, 10), x.Algorithm, x.Strategy, strconv.Itoa(x.Clients), strconv.Itoa(x.Runs),
				f(x.CallsMean), f(x.CompletionMSMean), f(x.PeakArrivals), strconv.Itoa(len(x.WaveHeights)),
				strings.Join(heights, " "), strconv.FormatInt(x.WaveThreshold, 10), time.Duration(x.Bin).String(),
				f(x.GiveUps), f(x.Duplicates), share,
				f(x.CompletionMSP50), f(x.CompletionMSP99), f(x.CompletionMSMax), f(x.LoadPeak), f(x.Requests), f(x.Amplification),
				f(x.Wasted), f(x.Withheld), f(x.Failed), f(x.RetriedWrongly), capacity,
			}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
