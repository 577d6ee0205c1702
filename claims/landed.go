package claims

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/backoff"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/traffic"
)

// pageLoadFanOut runs the page-load scenario (browsing users whose page views fan out to 8
// parallel calls, then bursts of list and filter calls) under the strict sliding log, the
// two-counter window and the token bucket of 10/s with burst 20, and compares the page
// loads each broke with the most any one user sent over 10 s.
func pageLoadFanOut() (string, Verdict, error) {
	algs := []string{"sliding-log", "sliding-window", "token-bucket"}
	rep, _, err := run{name: "page-load", algorithms: algs}.do()
	if err != nil {
		return "", "", err
	}
	got := map[string]report.Result{}
	for _, a := range algs {
		x, err := result(rep, a)
		if err != nil {
			return "", "", err
		}
		if x.BrokenPageLoads == nil || x.LongRunPeak == nil {
			return "", "", fmt.Errorf("page-load: %s measured no page loads", a)
		}
		got[a] = x
	}
	strict, window, bucket := got["sliding-log"], got["sliding-window"], got["token-bucket"]
	limit := float64(rep.Policy.Limit) / time.Duration(rep.Policy.Window).Seconds()
	measured := fmt.Sprintf("broken page loads (≥1 request refused) of %d: sliding-log %s, sliding-window %s, token-bucket %s; "+
		"the most one user got through over any 10 s: %.1f/s (sliding-log) and %.1f/s (token-bucket) against the %g/s limit",
		strict.PageLoads, percent(*strict.BrokenPageLoads), percent(*window.BrokenPageLoads), percent(*bucket.BrokenPageLoads),
		*strict.LongRunPeak, *bucket.LongRunPeak, limit)
	brokenStrict, brokenBucket := *strict.BrokenPageLoads, *bucket.BrokenPageLoads
	withinLimit := *strict.LongRunPeak <= limit && *bucket.LongRunPeak <= limit
	switch {
	case brokenStrict >= 0.10 && brokenBucket <= 0.01 && withinLimit:
		return measured, Holds, nil
	case brokenStrict > brokenBucket:
		return measured, HoldsWithCaveat, nil
	}
	return measured, DoesNotHold, nil
}

// jitterRuns and jitterClients are Brooker's setup as `rlsim backoff` runs it by default.
const jitterRuns, jitterClients = 100, 100

// fullJitter runs the optimistic-concurrency experiment of "Exponential Backoff And
// Jitter" (100 clients, 100 runs, base 5 ms, cap 2 s) with every strategy and compares
// full jitter's write calls and time to finish with capped exponential backoff (no
// jitter) and equal jitter; the others are reported beside them.
func fullJitter() (string, Verdict, error) {
	e := backoff.Experiment{Model: backoff.DefaultOCC, Clients: []int{jitterClients}, Runs: jitterRuns, Seed: 1}
	for _, name := range traffic.BackoffNames {
		b, err := traffic.NewBackoff(name, 5*time.Millisecond, 2*time.Second)
		if err != nil {
			return "", "", err
		}
		e.Strategies = append(e.Strategies, traffic.Plain(b))
	}
	rs, err := e.Run()
	if err != nil {
		return "", "", err
	}
	by := map[string]backoff.Result{}
	for _, r := range rs {
		by[r.Strategy] = r
	}
	full, expo, equal := by["full-jitter"], by["exponential"], by["equal-jitter"]
	none, decorrelated := by["none"], by["decorrelated-jitter"]
	secs := func(r backoff.Result) float64 { return r.CompletionMSMean / 1000 }
	measured := fmt.Sprintf("%d clients, mean of %d runs: full jitter %.0f calls in %.1f s; exponential %.0f in %.1f s (full makes %.2f× the calls); "+
		"equal jitter %.0f in %.1f s; for reference none %.0f in %.1f s, decorrelated %.0f in %.1f s",
		jitterClients, jitterRuns, full.CallsMean, secs(full), expo.CallsMean, secs(expo), full.CallsMean/expo.CallsMean,
		equal.CallsMean, secs(equal), none.CallsMean, secs(none), decorrelated.CallsMean, secs(decorrelated))
	beatsExpo := full.CallsMean < expo.CallsMean && full.CompletionMSMean < expo.CompletionMSMean
	beatsEqual := full.CallsMean < equal.CallsMean && full.CompletionMSMean < equal.CompletionMSMean
	switch {
	case beatsExpo && beatsEqual && full.CallsMean > 0.95*equal.CallsMean:
		return measured + fmt.Sprintf("; against equal jitter the calls differ by only %.0f%%: the gain there is time",
			100*(1-full.CallsMean/equal.CallsMean)), HoldsWithCaveat, nil
	case beatsExpo && beatsEqual:
		return measured, Holds, nil
	case beatsExpo:
		return measured + "; it beats exponential but not equal jitter on both counts", HoldsWithCaveat, nil
	}
	return measured, DoesNotHold, nil
}
