package report

// ResultName names a result in charts and per-row files: the algorithm, and for a fleet
// run "<algorithm>@<variant>", as the decisions file does, so variants stay apart.
func ResultName(x Result) string {
	if x.Distributed != nil && x.Distributed.Variant != "" {
		return x.Algorithm + "@" + x.Distributed.Variant
	}
	return x.Algorithm
}
