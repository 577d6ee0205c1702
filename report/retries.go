package report

import (
	"slices"
	"strconv"
	"strings"
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

// RetryTableColumns are the columns of the retry table, in order.
var RetryTableColumns = []Column[RetryResult]{
	{Name: "algorithm", Header: "algorithm", Key: true, Cell: func(x RetryResult) string { return x.Algorithm }},
	{Name: "strategy", Header: "strategy", Key: true, Cell: func(x RetryResult) string { return x.Strategy }},
	{Name: "clients", Header: "clients", Cell: func(x RetryResult) string { return strconv.Itoa(x.Clients) }},
	{Name: "runs", Header: "runs", Cell: func(x RetryResult) string { return strconv.Itoa(x.Runs) }},
	{Name: "calls_mean", Header: "calls\na run", Cell: func(x RetryResult) string { return strconv.FormatFloat(x.CallsMean, 'f', 1, 64) }},
	{Name: "amplification", Header: "calls per\nrequest", Cell: func(x RetryResult) string { return strconv.FormatFloat(x.Amplification, 'f', 2, 64) }},
	{Name: "completion_ms_mean", Header: "drained\nin ms", Cell: func(x RetryResult) string {
		return strconv.FormatFloat(x.CompletionMSMean, 'f', 1, 64)
	}},
	{Name: "peak_arrivals", Header: "highest\nwave", Cell: func(x RetryResult) string { return strconv.FormatFloat(x.PeakArrivals, 'f', 1, 64) }},
	{Name: "waves", Header: "waves", Cell: func(x RetryResult) string { return strconv.Itoa(len(x.WaveHeights)) }},
	{Name: "wave_heights", Header: "wave heights", Cell: func(x RetryResult) string {
		heights := make([]string, 0, maxWavesShown+1)
		for i, h := range x.WaveHeights {
			if i == maxWavesShown {
				heights = append(heights, "…")
				break
			}
			heights = append(heights, strconv.FormatInt(h, 10))
		}
		return strings.Join(heights, " ")
	}},
	{Name: "give_ups", Header: "give-ups", Cell: func(x RetryResult) string { return strconv.FormatFloat(x.GiveUps, 'f', 2, 64) }},
	{Name: "withheld", Header: "withheld", Cell: func(x RetryResult) string { return strconv.FormatFloat(x.Withheld, 'f', 2, 64) }},
	{Name: "duplicates", Header: "dupli-\ncates", Cell: func(x RetryResult) string { return strconv.FormatFloat(x.Duplicates, 'f', 2, 64) }},
	{Name: "retry_after_refused_share", Header: "refused after\nRetry-After", Cell: func(x RetryResult) string {
		return optionalPercent(x.RetryAfterRefusedShare)
	}},
}

// RetryPreferred are the columns the retry table shows by default, the most important
// first: the load the strategy put on the server and the herd, how long it took, then
// the figures only some strategies have.
func RetryPreferred(r *Report) []string {
	has := func(f func(x RetryResult) bool) bool { return AnyResult(r.Retries, f) }
	return slices.Concat(
		[]string{"amplification", "peak_arrivals", "waves", "completion_ms_mean"},
		when(has(func(x RetryResult) bool { return x.GiveUps != 0 }), "give_ups"),
		when(has(func(x RetryResult) bool { return x.Withheld != 0 }), "withheld"),
		when(has(func(x RetryResult) bool { return x.Duplicates != 0 }), "duplicates"),
		when(has(func(x RetryResult) bool { return x.RetryAfterRefusedShare != nil }), "retry_after_refused_share"),
		[]string{"calls_mean", "clients", "runs"},
	)
}
