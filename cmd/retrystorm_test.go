package cmd

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

func TestRunRetryStorm(t *testing.T) {
	t.Parallel()
	out, errOut, code := rlsim(t, "compare", "--scenario", "retry-storm", "--algorithms", "token-bucket", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Scenario string            `json:"scenario"`
		Results  []json.RawMessage `json:"results"`
		Retries  []struct {
			Strategy         string  `json:"strategy"`
			PeakArrivals     float64 `json:"peak_arrivals"`
			WaveHeights      []int64 `json:"wave_heights"`
			CompletionMSMean float64 `json:"completion_ms_mean"`
		} `json:"retries"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Scenario != "retry-storm" || rep.Results == nil || len(rep.Retries) != 5 {
		t.Fatalf("%s", out)
	}
	waves := map[string]int{}
	peaks := map[string]float64{}
	for _, r := range rep.Retries {
		waves[r.Strategy] = len(r.WaveHeights)
		peaks[r.Strategy] = r.PeakArrivals
	}
	if waves["exponential"] < 5 || waves["full-jitter"] != 0 {
		t.Fatalf("waves per strategy %v: want several for exponential, none for full-jitter", waves)
	}
	// peak_arrivals counts retries only, so the 1000 first tries at t=0 do not hide the herd.
	if peaks["exponential"] < 400 || peaks["full-jitter"]*10 > peaks["exponential"] {
		t.Fatalf("peak_arrivals per strategy %v: want a wave for exponential and none for full-jitter", peaks)
	}
	// The CSV form on the small copy of the storm: a row per algorithm and strategy, each
	// followed by a row per wave of its first run.
	csvOut, _, code := rlsim(t, "compare", "--scenario", "testdata/small-storm.yaml", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var kinds []string
	for _, row := range csvRecords(t, csvOut) {
		kinds = append(kinds, row["strategy"]+"/"+row["kind"]+row["wave"])
	}
	want := []string{"exponential/retry"}
	for i := 1; i <= 10; i++ {
		want = append(want, fmt.Sprintf("exponential/wave%d", i))
	}
	if want = append(want, "full-jitter/retry"); !slices.Equal(kinds, want) {
		t.Fatalf("rows %v, want %v", kinds, want)
	}
}
