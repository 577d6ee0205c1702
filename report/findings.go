package report

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// BackendCapacity is the capacity, in requests per second, of the overloaded backend a
// report's clients met; 0 when they met a limiter.
func BackendCapacity(r *Report) float64 {
	for _, x := range r.Retries {
		if x.Capacity > 0 {
			return x.Capacity
		}
	}
	return 0
}

// RetryFindings are the sentences that say what a report's retry table shows, one per
// algorithm: the highest retry wave of each strategy, which strategies came back in
// synchronized waves, how long each took to drain, and how much load it put on the server
// per request (with the jobs it gave up, if any).
func RetryFindings(r *Report) []string {
	var algs []string
	for _, x := range r.Retries {
		if !slices.Contains(algs, x.Algorithm) {
			algs = append(algs, x.Algorithm)
		}
	}
	var out []string
	for _, alg := range algs {
		var peaks, waves, drain, amp, gaveUp []string
		var bin time.Duration
		for _, x := range r.Retries {
			if x.Algorithm != alg {
				continue
			}
			bin = time.Duration(x.Bin)
			peaks = append(peaks, fmt.Sprintf("%.0f (%s)", x.PeakArrivals, x.Strategy))
			if n := len(x.WaveHeights); n > 0 {
				waves = append(waves, fmt.Sprintf("%s %d", x.Strategy, n))
			}
			drain = append(drain, fmt.Sprintf("%.1f s (%s)", x.CompletionMSMean/1000, x.Strategy))
			amp = append(amp, fmt.Sprintf("%.2f (%s)", x.Amplification, x.Strategy))
			if x.GiveUps > 0 {
				gaveUp = append(gaveUp, fmt.Sprintf("%.1f (%s)", x.GiveUps, x.Strategy))
			}
		}
		tail := ""
		if len(gaveUp) > 0 {
			tail = "; jobs given up a run: " + strings.Join(gaveUp, ", ")
		}
		wavesText := "no strategy came back in synchronized waves"
		if len(waves) > 0 {
			wavesText = "synchronized waves: " + strings.Join(waves, ", ")
		}
		out = append(out, fmt.Sprintf("%s: the highest retry wave (most retries in one %s bin) was %s; %s; drained in %s; load amplification (server calls ÷ client requests) %s%s.",
			alg, bin, strings.Join(peaks, ", "), wavesText, strings.Join(drain, ", "), strings.Join(amp, ", "), tail))
	}
	return out
}

// AllFindings are Findings for the algorithms' results (when any ran, or nothing else
// did) followed by RetryFindings.
func AllFindings(r *Report) []string {
	var out []string
	if len(r.Results) > 0 || len(r.Retries) == 0 {
		out = Findings(r)
	}
	return append(out, RetryFindings(r)...)
}
