package cmd

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/store"
)

// addStoreFlags adds the flags that put a cluster scenario's shared store on a real Redis.
func addStoreFlags(c *cobra.Command, o *compareOptions) {
	f := c.Flags()
	addRedisFlag(c, &o.redis, "run cluster scenarios' shared store, and the --lua scripts, on this Redis server (redis://host:port/db); keys go under the run's prefix, which must be unused, and are deleted afterwards")
	addStoreTimeoutFlag(c, &o.storeTimeout)
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
	r, err := store.NewRedisWith(o.redis, store.Options{Timeout: o.storeTimeout})
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
// they took to decide, and apart from it the time spent on the runs' keys afterwards (the
// audit, the deletion). Wall time is read here, in the command, never on the simulation
// path: the runs are handed the clock.
type storeMeter struct {
	stats run.StoreStats
	wall  time.Duration
	// now reads the wall clock; nil: time.Now.
	now func() time.Time
}

// run times fn and counts it when it sent script calls to a Redis store.
func (m *storeMeter) run(fn func(*run.StoreStats) error) error {
	if m.now == nil {
		m.now = time.Now
	}
	s := run.StoreStats{Clock: m.now}
	start := m.now()
	err := fn(&s)
	if s.ScriptCalls > 0 {
		m.wall += m.now().Sub(start) - s.AuditTime
		m.stats.ScriptCalls += s.ScriptCalls
		m.stats.RoundTrips += s.RoundTrips
	}
	m.stats.AuditTime += s.AuditTime
	m.stats.Deleted += s.Deleted
	m.stats.Prefixes = append(m.stats.Prefixes, s.Prefixes...)
	if m.stats.DeleteErr == nil {
		m.stats.DeleteErr = s.DeleteErr
	}
	return err
}

// report writes the decisions-per-second line on w (stderr) when a store was used: the
// rate counts the time spent deciding only, and the time spent on the keys afterwards
// comes after it.
func (m *storeMeter) report(w io.Writer, pipeline int) {
	if m.stats.ScriptCalls == 0 || m.wall <= 0 {
		return
	}
	line := fmt.Sprintf("rlsim: store: %d script decisions in %d round trips (pipeline %d) over %.2fs of wall time: %.0f decisions/s",
		m.stats.ScriptCalls, m.stats.RoundTrips, pipeline, m.wall.Seconds(), float64(m.stats.ScriptCalls)/m.wall.Seconds())
	if len(m.stats.Prefixes) > 0 {
		line += fmt.Sprintf("; then %.2fs to audit the keys left and delete the %d written", m.stats.AuditTime.Seconds(), m.stats.Deleted)
	}
	fmt.Fprintln(w, line)
}

// cleaned says what the runs deleted from a Redis server when they stopped early; ""
// when they wrote on none.
func (m *storeMeter) cleaned() string {
	if len(m.stats.Prefixes) == 0 {
		return ""
	}
	msg := fmt.Sprintf("deleted the %d keys it had written on the Redis server (under %s)", m.stats.Deleted, quotedList(m.stats.Prefixes))
	if m.stats.DeleteErr != nil {
		msg += fmt.Sprintf(", but not all: %v", m.stats.DeleteErr)
	}
	return msg
}

// failed is the error of runs that stopped with err: when they could not delete the
// keys they wrote on a Redis server (a server that died, say), err says so too, so the
// one line tells what may be left there.
func (m *storeMeter) failed(err error) error {
	d := m.stats.DeleteErr
	if d == nil || strings.Contains(err.Error(), d.Error()) {
		return err
	}
	return fmt.Errorf("%w; keys it wrote may be left on the server: %v", err, d)
}

// quotedList quotes each string and joins them with commas.
func quotedList(xs []string) string {
	return strings.Join(quoted(slices.Compact(slices.Clone(xs))), ", ")
}
