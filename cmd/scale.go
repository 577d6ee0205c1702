package cmd

import (
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
