package store

import "testing"

// The used_memory model against its calibration: per client at limit 100 and 100000
// clients, and the sliding log's skiplist at 1000 members (126440 B measured, 20000
// clients) within 1%.
func TestModelUsedMemoryCalibration(t *testing.T) {
	for alg, want := range map[string]int64{
		"fixed-window": 138, "sliding-window": 276, "token-bucket": 170, "leaky-bucket": 170, "gcra": 133, "sliding-log": 3717,
	} {
		got, err := ModelUsedMemory(alg, 100)
		if err != nil || got != want {
			t.Errorf("ModelUsedMemory(%s, 100) = %d, %v; measured %d", alg, got, err, want)
		}
	}
	got, _ := ModelUsedMemory("sliding-log", 1000)
	if d := float64(got-126440) / 126440; d < -0.01 || d > 0.01 {
		t.Errorf("ModelUsedMemory(sliding-log, 1000) = %d; measured 126440", got)
	}
	if _, err := ModelUsedMemory("nope", 100); err == nil {
		t.Error("an unknown algorithm has no model")
	}
}
