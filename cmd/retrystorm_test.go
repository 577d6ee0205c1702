package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRunRetryStorm(t *testing.T) {
	out, errOut, code := rlsim(t, "compare", "--scenario", "retry-storm", "--algorithms", "token-bucket", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Scenario string            `json:"scenario"`
		Results  []json.RawMessage `json:"results"`
		Retries  []struct {
			Strategy         string  `json:"strategy"`
			PeakRetries      float64 `json:"peak_retries"`
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
	for _, r := range rep.Retries {
		waves[r.Strategy] = len(r.WaveHeights)
	}
	if waves["exponential"] < 5 || waves["full-jitter"] != 0 {
		t.Fatalf("waves per strategy %v: want several for exponential, none for full-jitter", waves)
	}
	csvOut, _, code := rlsim(t, "compare", "--scenario", "retry-storm", "--algorithms", "token-bucket", "--format", "csv")
	if code != 0 || !strings.HasPrefix(csvOut, "scenario,seed,algorithm,strategy,") || strings.Count(csvOut, "\n") != 6 {
		t.Fatalf("csv:\n%s", csvOut)
	}
}
