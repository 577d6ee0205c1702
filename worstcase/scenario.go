package worstcase

import (
	"fmt"
	"strings"
	"time"
)

// AttackerKey is the key every request of a printed schedule carries.
const AttackerKey = "attacker"

// ScenarioName is the name a printed schedule's scenario takes for an algorithm; the
// command line writes it to NAME.yaml.
func ScenarioName(algorithm string) string { return "worst-" + algorithm }

// ScenarioYAML prints the result's schedule as a scenario file that `rlsim run` replays
// request for request: the same epoch (so fixed windows fall where they fell in the
// search), the same policy and algorithm, and script lines with exact offsets in
// nanoseconds (a drip of single requests becomes one line with a spread that
// reproduces each of its times to the nanosecond). epoch is the wall-clock time of t=0, the Unix time of
// r.Target.Epoch. The replay measures over the policy's Window, so its
// peak_window_admitted equals Worst.Peak when the search measured T = Window.
func (r Result) ScenarioYAML(epoch time.Time) []byte {
	p := r.Target.Policy
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by rlsim worst-case: the schedule that got the most through %s.\n", r.Target.Algorithm)
	fmt.Fprintf(&b, "# Engine: %d admitted in one window of %s (found by %s).\n", r.Worst.Peak, r.Target.window(), r.FoundBy)
	if r.Known {
		fmt.Fprintf(&b, "# Analytic bound: %s = %s.\n", r.Bound.Formula, formatBound(r.Bound.Value))
	}
	fmt.Fprintf(&b, "name: %s\n", ScenarioName(r.Target.Algorithm))
	fmt.Fprintf(&b, "description: worst case found for %s at %d per %s, burst %d — %d admitted in one window of %s\n",
		r.Target.Algorithm, p.Limit, p.Window, p.EffectiveBurst(), r.Worst.Peak, r.Target.window())
	fmt.Fprintf(&b, "epoch: %q\n", epoch.UTC().Format(time.RFC3339Nano))
	last := time.Duration(0)
	if n := len(r.Schedule); n > 0 {
		last = r.Schedule[n-1].At
	}
	fmt.Fprintf(&b, "duration: %s\n", last+p.Window)
	fmt.Fprintf(&b, "policy: {limit: %d, window: %s, burst: %d}\n", p.Limit, p.Window, p.EffectiveBurst())
	if r.Target.Own != nil {
		// A limiter the user brought is no algorithm a scenario file can name: bring it
		// again (--lua, --limiter-exec) to replay the schedule through it.
		fmt.Fprintf(&b, "# %s is your own limiter: replay with the same --lua or --limiter-exec.\n", r.Target.Algorithm)
	} else {
		fmt.Fprintf(&b, "algorithms: [%s]\n", r.Target.Algorithm)
	}
	b.WriteString("key: user\ntraffic:\n  - script:\n")
	for _, l := range r.Schedule.Lines() {
		spread := ""
		if l.Spread > 0 {
			spread = fmt.Sprintf(", spread: %s", l.Spread)
		}
		fmt.Fprintf(&b, "      - {at: %s, count: %d%s, key: %s, label: attacker}\n", l.At, l.Count, spread, AttackerKey)
	}
	return []byte(b.String())
}

// formatBound prints a bound without trailing zeros: 200, 124.5.
func formatBound(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
