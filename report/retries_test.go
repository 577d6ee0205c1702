package report

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// keysOf returns the keys of each object in a JSON array, in their order.
func keysOf(t *testing.T, data []byte) [][]string {
	t.Helper()
	var objects []map[string]json.RawMessage
	if err := json.Unmarshal(data, &objects); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	var out [][]string
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch tok {
		case json.Delim('{'):
			depth++
			if depth == 1 {
				out = append(out, nil)
			}
			continue
		case json.Delim('}'):
			depth--
			continue
		case json.Delim('['), json.Delim(']'):
			continue
		}
		if key, ok := tok.(string); ok && depth == 1 {
			out[len(out)-1] = append(out[len(out)-1], key)
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(out) != len(objects) {
		t.Fatalf("%d objects, %d key lists", len(objects), len(out))
	}
	return out
}

func twoRetryResults() []RetryResult {
	share := 0.25
	return []RetryResult{
		{Algorithm: "gcra", Strategy: "full-jitter", Clients: 20, Runs: 3, CallsMean: 41.5, PeakArrivals: 7, PeakArrivalsMax: 9,
			WaveHeights: []int64{9, 4}, WaveThreshold: 3, Bin: Duration(10 * time.Millisecond), GiveUps: 1, RetryAfterRefusedShare: &share,
			Arrivals: []int64{0, 9}},
		{Algorithm: "token-bucket", Strategy: "none", Clients: 20, Runs: 3, CallsMean: 20, Capacity: 200, Requests: 20, Amplification: 1},
	}
}

// A scenario's retries and `rlsim backoff`'s results each keep their own names in their
// own order: the layouts are contracts, and each names only fields RetryResult has.
func TestRetryResultLayouts(t *testing.T) {
	rs := twoRetryResults()
	for _, layout := range [][]string{scenarioRetryJSON, backoffRetryJSON} {
		for _, entry := range layout {
			name, _, _ := strings.Cut(entry, ",")
			if _, ok := retryFieldByJSON[name]; !ok {
				t.Errorf("layout names %q, not a JSON name of RetryResult", name)
			}
		}
	}
	// The contract, as DESIGN.md and the JSON of before the layouts were one type have it.
	scenarioKeys := []string{"algorithm", "strategy", "clients", "runs", "calls_mean", "completion_ms_mean",
		"completion_ms_p50", "completion_ms_p99", "completion_ms_max", "peak_arrivals", "wave_heights",
		"wave_threshold", "bin", "give_ups", "duplicates", "load_peak", "requests", "amplification", "wasted",
		"withheld", "failed", "retried_wrongly", "capacity", "retry_after_refused_share"}
	backoffKeys := []string{"strategy", "clients", "runs", "calls_mean", "completion_ms_mean", "peak_arrivals",
		"peak_arrivals_max", "completion_ms_p50", "completion_ms_p99", "completion_ms_max", "load_peak", "requests",
		"amplification", "wasted", "give_ups", "withheld", "failed", "retried_wrongly", "duplicates",
		"retry_after_refused_share"}
	without := func(keys []string, omit string) []string {
		return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == omit })
	}

	scenario, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	got := keysOf(t, scenario)
	if want := without(scenarioKeys, "capacity"); !slices.Equal(got[0], want) {
		t.Errorf("scenario layout, first result: keys %v, want %v", got[0], want)
	}
	if want := scenarioKeys; !slices.Equal(got[1], want) {
		t.Errorf("scenario layout, second result: keys %v, want %v", got[1], want)
	}
	if !strings.Contains(string(scenario), `"retry_after_refused_share":null`) || !strings.Contains(string(scenario), `"bin":"10ms"`) {
		t.Errorf("scenario layout: %s", scenario)
	}

	backoff, err := json.Marshal(BackoffResults(rs))
	if err != nil {
		t.Fatal(err)
	}
	got = keysOf(t, backoff)
	if want := backoffKeys; !slices.Equal(got[0], want) {
		t.Errorf("backoff layout, first result: keys %v, want %v", got[0], want)
	}
	if want := without(backoffKeys, "retry_after_refused_share"); !slices.Equal(got[1], want) {
		t.Errorf("backoff layout, second result: keys %v, want %v", got[1], want)
	}
	// What the backoff layout holds reads back whole: the claims decode it.
	var back []RetryResult
	if err := json.Unmarshal(backoff, &back); err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		want := rs[i]
		want.Algorithm, want.WaveHeights, want.WaveThreshold, want.Bin, want.Capacity, want.Arrivals = "", nil, 0, 0, 0, nil
		if !reflect.DeepEqual(back[i], want) {
			t.Errorf("result %d read back as %+v, want %+v", i, back[i], want)
		}
	}
	if null, err := json.Marshal(BackoffResults(nil)); err != nil || string(null) != "null" {
		t.Errorf("nil results: %s, %v", null, err)
	}
}
