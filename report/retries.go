package report

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// RetryResult is one retry strategy at one client count, averaged over seeded runs: how
// closed-loop clients that retry fared. backoff.Experiment measures it; a scenario's
// clients section adds the algorithm, the waves and the capacity. It is written in two
// layouts: a scenario report's (MarshalJSON) and `rlsim backoff`'s (BackoffResults). The
// JSON names follow DESIGN.md's retry metrics; the tags serve decoding both layouts.
type RetryResult struct {
	// Algorithm is the limiter the clients faced in a scenario; empty in `rlsim backoff`.
	Algorithm string `json:"algorithm"`
	Strategy  string `json:"strategy"`
	Clients   int    `json:"clients"`
	Runs      int    `json:"runs"`
	// CallsMean is the mean number of attempts (OCC: write calls) per run, over all clients.
	CallsMean float64 `json:"calls_mean"`
	// CompletionMSMean is the mean time, in milliseconds, until the last client finished
	// (succeeded or gave up).
	CompletionMSMean float64 `json:"completion_ms_mean"`
	// CompletionMSP50, CompletionMSP99 and CompletionMSMax are percentiles of how long
	// each client's job took, from its start to its end however it ended, in ms: exact
	// (nearest rank) within each run, then averaged over the runs.
	CompletionMSP50 float64 `json:"completion_ms_p50"`
	CompletionMSP99 float64 `json:"completion_ms_p99"`
	CompletionMSMax float64 `json:"completion_ms_max"`
	// PeakArrivals is the mean over runs of the most retries that reached the server in
	// one bin (of Bin, 10 ms by default): the height of the highest retry wave. A retry is
	// every attempt after the first try of a request, so the clients' own first requests,
	// which all leave together by the premise of the experiment, are not counted; what is
	// left is the herd the strategy makes. Clients in lockstep make tall waves, jitter
	// flattens them.
	PeakArrivals float64 `json:"peak_arrivals"`
	// PeakArrivalsMax is the highest retry wave of any run.
	PeakArrivalsMax int64 `json:"peak_arrivals_max"`
	// WaveHeights are the heights of the first run's retry waves, in time order (runs of
	// bins holding at least WaveThreshold retries each); set by a scenario's clients.
	WaveHeights   []int64  `json:"wave_heights"`
	WaveThreshold int64    `json:"wave_threshold"`
	Bin           Duration `json:"bin"`
	// GiveUps is the mean number of jobs per run abandoned: at the attempt limit, at the
	// deadline, or because a policy withheld an attempt.
	GiveUps float64 `json:"give_ups"`
	// Duplicates is the mean number of times per run that non-idempotent work ran again
	// because a retry repeated a request the server had already carried out.
	Duplicates float64 `json:"duplicates"`
	// LoadPeak is the mean over runs of the most attempts of any kind, first tries
	// included, reaching the server in one bin: the peak load the server carried.
	LoadPeak float64 `json:"load_peak"`
	// Requests is the mean number of requests per run the clients set out to make (each
	// first try, sent or withheld by a policy).
	Requests float64 `json:"requests"`
	// Amplification is the server's calls ÷ the clients' requests: 1 when nothing was
	// retried, above 1 by the load retries added, below 1 when a policy withheld first tries.
	Amplification float64 `json:"amplification"`
	// Wasted is the mean number of calls per run that brought no success: refused (429),
	// failed (5xx, other 4xx), or answered after the client stopped waiting.
	Wasted float64 `json:"wasted"`
	// Withheld is the mean number of attempts per run a policy refused to send (a retry
	// budget spent, a breaker open); each ended its job as a give-up.
	Withheld float64 `json:"withheld"`
	// Failed is the mean number of jobs per run ended by a client error (a 4xx other than
	// 429), which a client does not retry.
	Failed float64 `json:"failed"`
	// RetriedWrongly is the mean number of retries per run sent after a client error (only
	// clients that retry every error do).
	RetriedWrongly float64 `json:"retried_wrongly"`
	// Capacity is the overloaded backend's capacity in requests per second (a scenario's
	// server: overload); 0 otherwise.
	Capacity float64 `json:"capacity,omitempty"`
	// RetryAfterRefusedShare is, over all retries whose sleep Retry-After decided, the
	// share refused by the limit again (rate-limited model with --retry-after honor); nil
	// when there was none.
	RetryAfterRefusedShare *float64 `json:"retry_after_refused_share"`
	// Arrivals is the first run's retries per bin of Bin, from t=0 (the series
	// PeakArrivals takes the highest bin of, and the herd chart draws), Attempts its
	// attempts of any kind (the load chart); both are kept only when asked for
	// (backoff.Experiment.KeepSeries). Not in the JSON.
	Arrivals, Attempts []int64 `json:"-"`
}

// scenarioRetryJSON and backoffRetryJSON are the two layouts of a RetryResult: JSON
// names in output order, ",omitempty" where a zero value is left out. They are contracts
// (DESIGN.md): a scenario report's retries, and the results of `rlsim backoff`.
var (
	scenarioRetryJSON = []string{"algorithm", "strategy", "clients", "runs", "calls_mean", "completion_ms_mean",
		"completion_ms_p50", "completion_ms_p99", "completion_ms_max", "peak_arrivals", "wave_heights",
		"wave_threshold", "bin", "give_ups", "duplicates", "load_peak", "requests", "amplification", "wasted",
		"withheld", "failed", "retried_wrongly", "capacity,omitempty", "retry_after_refused_share"}
	backoffRetryJSON = []string{"strategy", "clients", "runs", "calls_mean", "completion_ms_mean", "peak_arrivals",
		"peak_arrivals_max", "completion_ms_p50", "completion_ms_p99", "completion_ms_max", "load_peak", "requests",
		"amplification", "wasted", "give_ups", "withheld", "failed", "retried_wrongly", "duplicates",
		"retry_after_refused_share,omitempty"}
)

// retryFieldByJSON maps each JSON name of RetryResult to its field index.
var retryFieldByJSON = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[RetryResult]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = i
	}
	return m
}()

// appendJSON appends x as a JSON object in layout's order.
func (x RetryResult) appendJSON(b []byte, layout []string) ([]byte, error) {
	v := reflect.ValueOf(x)
	b = append(b, '{')
	first := true
	for _, entry := range layout {
		name, opt, _ := strings.Cut(entry, ",")
		i, ok := retryFieldByJSON[name]
		if !ok {
			return nil, fmt.Errorf("retry result layout names %q, which RetryResult has no field for", name)
		}
		f := v.Field(i)
		if opt == "omitempty" && f.IsZero() {
			continue
		}
		val, err := json.Marshal(f.Interface())
		if err != nil {
			return nil, err
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendQuote(b, name)
		b = append(b, ':')
		b = append(b, val...)
	}
	return append(b, '}'), nil
}

// MarshalJSON writes x in a scenario report's layout.
func (x RetryResult) MarshalJSON() ([]byte, error) { return x.appendJSON(nil, scenarioRetryJSON) }

// BackoffResults are retry results written in the layout of `rlsim backoff`'s results:
// no algorithm, waves or capacity, the highest wave of any run, and the Retry-After share
// left out when there was none.
type BackoffResults []RetryResult

// MarshalJSON writes rs as a JSON array in `rlsim backoff`'s layout; nil is null.
func (rs BackoffResults) MarshalJSON() ([]byte, error) {
	if rs == nil {
		return []byte("null"), nil
	}
	b := []byte{'['}
	for i, x := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = x.appendJSON(b, backoffRetryJSON); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
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
