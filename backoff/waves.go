package backoff

// Waves finds the waves in a series of arrivals per bin: maximal runs of consecutive bins
// holding at least threshold arrivals each, and returns each wave's height (its highest
// bin), in time order. Clients retrying in lockstep make a few tall waves with empty bins
// between them; jittered clients make a low smear that rarely reaches the threshold.
// A threshold below 1 counts as 1.
func Waves(series []int64, threshold int64) []int64 {
	threshold = max(threshold, 1)
	var heights []int64
	in := false
	for _, v := range series {
		switch {
		case v >= threshold && !in:
			heights = append(heights, v)
			in = true
		case v >= threshold:
			heights[len(heights)-1] = max(heights[len(heights)-1], v)
		default:
			in = false
		}
	}
	return heights
}
