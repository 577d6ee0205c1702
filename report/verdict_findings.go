package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// maxNamed is how many runs a finding names before it counts the rest.
const maxNamed = 4

// verdictFinding is r's verdict in one sentence: who broke the promise and by how much,
// who kept it and at what cost (or, for retrying clients, which strategy loaded the
// server least and which came back in waves).
func verdictFinding(r *Report) string {
	var parts []string
	if len(r.Results) > 0 {
		parts = append(parts, promiseFinding(r))
	}
	if len(r.Retries) > 0 {
		parts = append(parts, retryFinding(r))
	}
	if len(parts) == 0 {
		return "nothing ran."
	}
	return strings.Join(parts, "; ") + "."
}

func promiseFinding(r *Report) string {
	kind := costKind(r)
	fleet := HasDistributed(r)
	algs := map[string]bool{}
	for _, x := range r.Results {
		algs[x.Algorithm] = true
	}
	name := func(x Result) string {
		switch {
		case !fleet:
			return x.Algorithm
		case len(algs) == 1:
			return FleetOf(x).Variant
		}
		return ResultName(x)
	}
	var broke, kept []Result
	for _, x := range r.Results {
		if Broke(x.OverAdmission) {
			broke = append(broke, x)
		} else {
			kept = append(kept, x)
		}
	}
	slices.SortStableFunc(broke, func(a, b Result) int { return -cmp.Compare(a.OverAdmission, b.OverAdmission) })
	named := maxNamed
	if fleet && len(algs) > 1 {
		named = 2 // "algorithm@variant" names are long
	}
	var overs []string
	for i, x := range broke {
		if i == named && len(broke) > named+1 {
			overs = append(overs, fmt.Sprintf("%d more", len(broke)-named))
			break
		}
		overs = append(overs, fmt.Sprintf("%s %.2f×", name(x), x.OverAdmission))
	}
	var names []string
	for _, x := range kept {
		names = append(names, name(x))
	}
	runs := "algorithm"
	if fleet {
		runs = "run"
		if len(algs) == 1 {
			runs = "variant"
		}
	}
	costKind := kind
	switch {
	case len(r.Results) == 1 && len(broke) == 1:
		return fmt.Sprintf("%s broke the promise, %s", overs[0], costPhrase(costKind, broke, name))
	case len(r.Results) == 1:
		return fmt.Sprintf("%s kept the promise, %s", names[0], costPhrase(costKind, kept, name))
	case len(broke) == 0:
		return fmt.Sprintf("every %s kept the promise, %s", runs, costPhrase(costKind, kept, name))
	case len(kept) == 0:
		return fmt.Sprintf("every %s broke the promise (%s), %s", runs, JoinAnd(overs), costPhrase(costKind, broke, name))
	case len(kept) > maxNamed+1:
		return fmt.Sprintf("%s broke the promise; the other %d %ss kept it, %s", JoinAnd(overs), len(kept), runs, costPhrase(costKind, kept, name))
	}
	return fmt.Sprintf("%s broke the promise; %s kept it, %s", JoinAnd(overs), JoinAnd(names), costPhrase(costKind, kept, name))
}

// costPhrase says what the runs xs paid in kind's figure: nothing, one figure, or the
// range from the cheapest to the dearest.
func costPhrase(kind CostKind, xs []Result, name func(Result) string) string {
	what := [...]string{
		CostFalseRejects:     "false rejects",
		CostLegitRefused:     "legit requests refused",
		CostAttackerAdmitted: "attacker requests admitted",
		CostPagesBroken:      "page loads broken",
	}[kind]
	none := [...]string{
		CostFalseRejects:     "with no false reject",
		CostLegitRefused:     "refusing no legit request",
		CostAttackerAdmitted: "admitting no attacker request",
		CostPagesBroken:      "breaking no page load",
	}[kind]
	sorted := slices.Clone(xs)
	slices.SortStableFunc(sorted, func(a, b Result) int { return cmp.Compare(kind.cost(a), kind.cost(b)) })
	lo, hi := sorted[0], sorted[len(sorted)-1]
	switch {
	case kind.cost(hi) == 0:
		return none
	case len(sorted) == 1:
		return fmt.Sprintf("%s %s", what, Percent(kind.cost(lo)))
	case kind.cost(lo) == kind.cost(hi):
		return fmt.Sprintf("%s %s each", what, Percent(kind.cost(lo)))
	}
	return fmt.Sprintf("%s from %s (%s) to %s (%s)", what, Percent(kind.cost(lo)), name(lo), Percent(kind.cost(hi)), name(hi))
}

// retryFinding names, per algorithm, the strategy that made the fewest server calls per
// client request, and the strategies that came back in synchronized waves.
func retryFinding(r *Report) string {
	var algs []string
	best := map[string]RetryResult{}
	var waves []string
	for _, x := range r.Retries {
		if b, ok := best[x.Algorithm]; !ok || x.Amplification < b.Amplification {
			if !ok {
				algs = append(algs, x.Algorithm)
			}
			best[x.Algorithm] = x
		}
		if len(x.WaveHeights) > 0 && !slices.Contains(waves, x.Strategy) {
			waves = append(waves, x.Strategy)
		}
	}
	var fewest []string
	for _, a := range algs {
		fewest = append(fewest, fmt.Sprintf("%s on %s (%.2f)", best[a].Strategy, a, best[a].Amplification))
	}
	wavesText := "no strategy came back in synchronized waves"
	if len(waves) > 0 {
		wavesText = "synchronized retry waves with " + JoinAnd(waves)
	}
	return fmt.Sprintf("clients retrying: fewest calls per request %s; %s", JoinAnd(fewest), wavesText)
}

// JoinAnd joins words as a sentence lists them: "a", "a and b", "a, b and c".
func JoinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
