package cmd

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/scenario"
)

// addScaleFlags adds the flags that steer how big runs use the machine.
func addScaleFlags(c *cobra.Command, o *compareOptions) {
	f := c.Flags()
	f.BoolVar(&o.memory, "memory", false, "report the bytes the run holds per key (always on for heavy scenarios)")
	f.IntVar(&o.workers, "workers", 0, "algorithms evaluated at once, each group on its own core (default: GOMAXPROCS; results do not depend on it)")
	f.BoolVar(&o.yes, "yes", false, "run a scenario of a billion decisions or more (requests times algorithms: hours of run; without --yes rlsim prints the estimate and stops)")
}

// confirmDecisions is the number of decisions — requests, by the scenario's estimate
// (scenario.Requests), times the algorithms that decide each — from which compare and
// run want --yes: a billion, which takes hours (million-keys decides 6·10⁷ in seconds).
const confirmDecisions = 1_000_000_000

// confirmSize refuses, unless yes, a scenario whose estimated decisions reach
// confirmDecisions, in one line that gives the estimate (exit 2).
func confirmSize(sc *scenario.Scenario, algs []string, yes bool) error {
	n := sc.Requests()
	decisions := n * float64(max(len(algs), 1))
	if yes || decisions < confirmDecisions {
		return nil
	}
	each := ""
	if k := len(algs); k > 1 {
		each = fmt.Sprintf(" to each of %d algorithms, %.2g decisions", k, decisions)
	}
	return usagef("scenario %s sends about %.2g requests%s, a billion or more: a run of hours and of memory to match; add --yes to run it", sc.Name, n, each)
}

// heavyGCPercent is the garbage collector's target for runs with a heavy scenario. Such a
// run's heap is almost all per-key state that lives to the end; the default target (100:
// collect when the heap has doubled since the last collection) would let the process
// grow to about twice what the run holds, while 50 keeps peak RSS near the reported
// memory at no measurable cost in CPU, since that state holds almost no pointers to mark.
const heavyGCPercent = 50

// tuneGCForHeavy sets heavyGCPercent when one of the scenarios is heavy and the user has
// not chosen a GOGC of their own, and returns the function that restores the previous
// setting.
func tuneGCForHeavy(scenarios []*scenario.Scenario) (restore func()) {
	if os.Getenv("GOGC") != "" || !slices.ContainsFunc(scenarios, func(sc *scenario.Scenario) bool { return sc.Heavy }) {
		return func() {}
	}
	old := debug.SetGCPercent(heavyGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// collectAfterHeavy collects the garbage a heavy scenario's run leaves: nearly all its
// heap is per-key state that dies when the run returns, and the heap target it raised
// means no collection would come for a long while. Collected now, the charts and files
// rendered next reuse that memory instead of adding to the peak.
func collectAfterHeavy(sc *scenario.Scenario) {
	if sc.Heavy {
		runtime.GC()
	}
}
