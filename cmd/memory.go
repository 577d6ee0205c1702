package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"runtime/debug"
	"runtime/metrics"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/render"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/store"
	"github.com/rlsim/rlsim/store/sizing"
)

type memoryOptions struct {
	*globalOptions
	keys       int
	limit      int64
	window     time.Duration
	algorithms []string
	redisURL   string
	timeout    time.Duration
	prefix     string
	prefixSet  bool
	load       int
}

// defaultMemoryPrefix is where rlsim memory writes on a database it found empty.
const defaultMemoryPrefix = "rlsim-memory:"

func newMemoryCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &memoryOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "memory",
		Short: "Memory per key of every algorithm, in-process and in Redis",
		Long: `memory sizes each algorithm's state for one client at its limit: the in-process bytes
(counted from the limiter's own representation) and the bytes in Redis. With --redis it
loads --keys clients per algorithm (at most --load) shaped exactly as the scripts write
them, reads MEMORY USAGE, and deletes every key it wrote (and no other). It refuses a database that holds
keys unless --prefix confines it to an unused prefix. Without --redis the Redis column is
a model calibrated on Redis 7, marked "model".

With --charts (default svg) it draws memory.svg (and .png) under OUT/memory/: bytes per
key in-process beside Redis, a log scale, the Redis bars labelled measured or model.`,
		Example: `  # a million clients at 100 per minute, Redis from the calibrated model
  rlsim memory

  # the sliding log against the two counters at a limit of 1000
  rlsim memory --keys 100000 --limit 1000 --algorithms sliding-log,sliding-window

  # measured on a real Redis, under a prefix of its own
  rlsim memory --redis redis://127.0.0.1:6379/0 --prefix rlsim-memory: --load 10000`,
		Args: argCount(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			o.prefixSet = c.Flags().Changed("prefix")
			return runMemory(c.Context(), o, streams)
		},
	}
	f := c.Flags()
	f.IntVar(&o.keys, "keys", 1_000_000, "number of active client keys the totals are for (and, with --redis, loaded)")
	o.limit, o.window = 100, time.Minute
	f.Var(unitsValue{&o.limit}, "limit", "limit per window each client is held at")
	f.Var(windowValue{&o.window}, "window", "window of the limit")
	addAlgorithmsFlag(c, &o.algorithms, "algorithms to size (default: every one with a memory model)", func(k *algorithms.Kind) error {
		if !store.Sized(k) {
			return fmt.Errorf("no memory model of its keys in Redis (want one of %s, or kong:… policy=redis)", strings.Join(store.MemoryAlgorithms(), ", "))
		}
		return nil
	})
	addRedisFlag(c, &o.redisURL, "measure on this Redis server (redis://host:port/db) instead of the model")
	addStoreTimeoutFlag(c, &o.timeout)
	f.IntVar(&o.load, "load", 100_000, "with --redis: clients loaded per algorithm, at most --keys (totals scale the measured mean to --keys)")
	f.StringVar(&o.prefix, "prefix", defaultMemoryPrefix, "with --redis: write only keys under this prefix (allows a non-empty database)")
	g.addFormatFlag(c, allFormats...)
	g.addOutFlags(c)
	return c
}

func (o *memoryOptions) validate() error {
	if o.keys <= 0 {
		return usagef("--keys must be positive, got %d", o.keys)
	}
	if o.keys > 100_000_000 {
		return usagef("--keys %d is more than 100000000", o.keys)
	}
	if err := store.CheckPolicy(algorithms.Policy{Limit: o.limit, Window: o.window}); err != nil {
		return usagef("--limit/--window: %v", err)
	}
	if o.load <= 0 {
		return usagef("--load must be positive, got %d", o.load)
	}
	if o.prefixSet && o.redisURL == "" {
		return usagef("--prefix needs --redis")
	}
	if o.prefixSet && o.prefix == "" {
		return usagef("--prefix must not be empty")
	}
	return nil
}

func runMemory(ctx context.Context, o *memoryOptions, streams IO) error {
	if err := o.validate(); err != nil {
		return err
	}
	formats, err := parseCharts(o.charts)
	if err != nil {
		return err
	}
	opts := store.SizeOptions{
		Keys:           o.keys,
		Policy:         algorithms.Policy{Limit: o.limit, Window: o.window},
		Algorithms:     o.algorithms,
		Prefix:         o.prefix,
		Load:           o.load,
		EncodingLimits: []int64{64, store.ZsetListpackEntries, store.ZsetListpackEntries + 1, 256},
	}
	var deleted int
	if o.redisURL != "" {
		var stop func()
		ctx, stop = interruptible(ctx)
		defer stop()
		// The wall clock is read here, in the command: the pause lets the server shrink
		// its tables between two measurements.
		opts.MeasureHooks = store.MeasureHooks{Context: ctx, Pause: time.Sleep, Deleted: func(n int) { deleted += n }}
		so, stopWatch := watchStore(o.timeout, streams.Err, nil)
		defer stopWatch()
		r, err := store.NewRedisWith(o.redisURL, so)
		if err != nil {
			return fmt.Errorf("--redis: %w", err)
		}
		defer r.Close()
		if err := store.CheckEmpty(r, o.prefix, o.prefixSet); err != nil {
			return fmt.Errorf("--redis %s: %w", store.RedactURL(o.redisURL), err)
		}
		opts.Redis = r
	}
	rep, err := store.Size(opts)
	if err != nil {
		var left *store.LeftError
		if errors.As(err, &left) {
			if cmd, note := store.CleanupCommand(o.redisURL, o.prefix); cmd != "" {
				err = fmt.Errorf("%w; once the server answers, delete them with: %s", err, cmd)
				if note != "" {
					err = fmt.Errorf("%w (%s)", err, note)
				}
			}
			return interruption(ctx, err, fmt.Sprintf("deleted %d keys of those it had written; up to %d are left under %q", deleted, left.Left, o.prefix))
		}
		return interruption(ctx, err, fmt.Sprintf("deleted the %d keys it had written under %q", deleted, o.prefix))
	}
	var outs outputSet
	defer outs.discard()
	return writeResults(&outs, streams.Out, destination{o.format, o.out, formats}, memoryOutput(rep, o.algorithms))
}

// memoryFolder is the folder under --out that rlsim memory draws into.
const memoryFolder = "memory"

// memoryOutput is the output of rlsim memory: the report, its tables (the per-algorithm
// one as CSV; for people followed by the recap when there is more than one algorithm),
// and the figure of bytes per key under memory/. algorithms are those --algorithms named.
func memoryOutput(rep *store.MemoryReport, algorithms []string) output {
	return output{
		JSON: rep,
		CSV:  tableCSV(sizing.Tables(rep)[0]), // one table per CSV stream: the per-algorithm one
		Human: func(w io.Writer, markdown bool) error {
			if err := humanTables(sizing.HumanTables(rep)...)(w, markdown); err != nil {
				return err
			}
			if !markdown && len(rep.Results) > 1 {
				// The answer was above the encoding table: again, where the terminal stops.
				_, err := io.WriteString(w, "\n"+sizing.Recap(rep))
				return err
			}
			return nil
		},
		Figures: func() ([]*chart.Figure, error) {
			if len(rep.Results) == 0 {
				return nil, nil
			}
			return []*chart.Figure{render.MemoryFigure(rep, algorithms)}, nil
		},
		FigureDir: memoryFolder,
	}
}

// heapKeeper returns the memory the Go heap holds free to the operating system as a
// replay's state grows. The state grows by whole arrays — a limiter's per-key state
// doubles, and the old array is left behind — and the runtime keeps what it frees for later
// use; a replay never has a later use for it, so it would stay in the process's resident
// memory, and on top of it the garbage the next collection has not yet reached. Checking
// costs a read of the runtime's metrics every few thousand lines; each time the heap has
// grown by an eighth, or holds an eighth free, a collection returns what is free, a dozen
// times in a run of millions of lines.
type heapKeeper struct {
	samples []metrics.Sample
	lines   int64
	used    uint64 // the heap in use after the last return
}

func newHeapKeeper() *heapKeeper {
	return &heapKeeper{samples: []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}}
}

// check is called with the lines replayed so far.
func (k *heapKeeper) check(lines int64) {
	if lines-k.lines < 1<<14 {
		return
	}
	k.lines = lines
	metrics.Read(k.samples)
	free, used := k.samples[0].Value.Uint64(), k.samples[1].Value.Uint64()
	if free > used/8 || used > k.used+k.used/8 {
		k.release()
	}
}

// release returns what the heap holds free now.
func (k *heapKeeper) release() {
	debug.FreeOSMemory()
	metrics.Read(k.samples)
	k.used = k.samples[1].Value.Uint64()
}
