package cmd

import "github.com/spf13/cobra"

// addScaleFlags adds the flags that steer how big runs use the machine.
func addScaleFlags(c *cobra.Command, o *compareOptions) {
	f := c.Flags()
	f.BoolVar(&o.memory, "memory", false, "report the bytes the run holds per key (always on for heavy scenarios)")
	f.IntVar(&o.workers, "workers", 0, "algorithms evaluated at once, each group on its own core (default: GOMAXPROCS; results do not depend on it)")
}
