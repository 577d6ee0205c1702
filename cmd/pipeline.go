package cmd

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/store"
)

// addStoreFlags adds the flags that put a cluster scenario's shared store on a real Redis.
func addStoreFlags(c *cobra.Command, o *compareOptions) {
	f := c.Flags()
	f.StringVar(&o.redis, "redis", "", "run cluster scenarios' shared store, and the --lua scripts, on this Redis server (redis://host:port/db); keys go under the run's prefix, which must be unused, and are deleted afterwards")
	f.IntVar(&o.pipeline, "pipeline", run.DefaultPipeline, "script calls a fleet on Redis sends per round trip where no decision depends on an earlier reply (1: one at a time)")
}

// checkStoreFlags validates --pipeline, and --redis by connecting to it once, so a wrong
// address is reported against the flag before any run starts.
func (o *compareOptions) checkStoreFlags() error {
	if o.pipeline < 1 || o.pipeline > run.MaxPipeline {
		return usagef("--pipeline: must be between 1 and %d, got %d", run.MaxPipeline, o.pipeline)
	}
	if o.redis == "" {
		return nil
	}
	r, err := store.NewRedis(o.redis)
	if err != nil {
		return fmt.Errorf("--redis: %w", err)
	}
	return r.Close()
}

// useRedis moves the shared store of every cluster scenario to --redis; a run whose
// scenarios have no cluster section has no store to move, which is a mistake.
func (o *compareOptions) useRedis(loaded []*scenario.Scenario) error {
	if o.redis == "" {
		return nil
	}
	moved := 0
	for _, sc := range loaded {
		if sc.Cluster != nil {
			if err := sc.UseRedis(o.redis); err != nil {
				return usagef("--redis: %v", err)
			}
			moved++
		}
	}
	if moved == 0 && len(o.own.lua) == 0 {
		return usagef("--redis: none of the scenarios has a cluster section, so none has a shared store to run on Redis, and no --lua script is given")
	}
	return nil
}

// storeMeter adds up the script decisions runs sent to a Redis store and the wall time
// of those runs. Wall time is read here, in the command, never on the simulation path.
type storeMeter struct {
	stats run.StoreStats
	wall  time.Duration
}

// run times fn and counts it when it sent script calls to a Redis store.
func (m *storeMeter) run(fn func(*run.StoreStats) error) error {
	var s run.StoreStats
	start := time.Now()
	err := fn(&s)
	if s.ScriptCalls > 0 {
		m.wall += time.Since(start)
		m.stats.ScriptCalls += s.ScriptCalls
		m.stats.RoundTrips += s.RoundTrips
	}
	return err
}

// report writes the decisions-per-second line on w (stderr) when a store was used.
func (m *storeMeter) report(w io.Writer, pipeline int) {
	if m.stats.ScriptCalls == 0 || m.wall <= 0 {
		return
	}
	fmt.Fprintf(w, "rlsim: store: %d script decisions in %d round trips (pipeline %d) over %.2fs of wall time: %.0f decisions/s\n",
		m.stats.ScriptCalls, m.stats.RoundTrips, pipeline, m.wall.Seconds(), float64(m.stats.ScriptCalls)/m.wall.Seconds())
}
