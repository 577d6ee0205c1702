package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"runtime/debug"
	"runtime/metrics"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
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
	if o.out == "" {
		formats = nil
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
	var buf bytes.Buffer
	if err := renderMemory(&buf, o.format, rep); err != nil {
		return err
	}
	charts, err := renderMemoryCharts(o, rep, formats)
	if err != nil {
		return err
	}
	var outs outputSet
	defer outs.discard()
	if err := stageOutFiles(&outs, o.out, charts); err != nil {
		return err
	}
	return commitWithStdout(&outs, streams.Out, buf.Bytes())
}

func memoryTables(rep *store.MemoryReport) []report.Table {
	main := report.Table{
		Title: fmt.Sprintf("memory per key — %d keys, limit %d per %s, Redis: %s", rep.Keys, rep.Limit, rep.Window, redisLabel(rep)),
		Header: []string{"algorithm", "state\nB per key", "Redis\nB per key", "growth\nB per key", "Redis\nfigures", "encoding",
			"state\ntotal", "Redis\ntotal", "vs two\ncounters"},
		Names: []string{"algorithm", "state_bytes_per_key", "redis_bytes_per_key", "redis_used_memory_per_key", "redis_source", "redis_encoding",
			"state_bytes_total", "redis_bytes_total", "redis_vs_two_counters"},
		Width: report.DefaultWidth,
		Keys:  1,
	}
	main.Notes = append(main.Notes, "state: the algorithm's in-process state; Redis: MEMORY USAGE of its keys; growth: used_memory's growth; "+
		"totals for every key; vs two counters: Redis bytes over the two-counter window's")
	var two, log store.MemoryRow
	var disturbed []string
	for _, r := range rep.Results {
		vs := "-"
		if r.VsTwoCounters > 0 {
			vs = strconv.FormatFloat(r.VsTwoCounters, 'f', 1, 64) + "×"
		}
		used := strconv.FormatFloat(r.RedisUsedMemoryPerKey, 'f', 0, 64)
		if r.RedisUsedMemoryDisturbed {
			used = "-"
			disturbed = append(disturbed, r.Algorithm)
		}
		main.Rows = append(main.Rows, []string{
			r.Algorithm, strconv.FormatFloat(r.StateBytesPerKey, 'f', 0, 64), strconv.FormatFloat(r.RedisBytesPerKey, 'f', 0, 64),
			used,
			r.RedisSource, r.RedisEncoding, humanBytes(r.StateBytesTotal), humanBytes(r.RedisBytesTotal), vs,
		})
		switch algorithms.FormOf(r.Algorithm) {
		case algorithms.FormTwoWindowCounts:
			two = r
		case algorithms.FormTimestamps:
			log = r
		}
	}
	if len(disturbed) > 0 {
		main.Notes = append(main.Notes, fmt.Sprintf("used_memory did not grow while %s loaded: another client of this server freed memory meanwhile, "+
			"so there is no used_memory figure (-) for it; MEMORY USAGE is per key and unaffected. Measure on a server nobody else uses.", strings.Join(disturbed, ", ")))
	}
	if rep.SlidingLogVsTwoCounters > 0 {
		source := "measured"
		if rep.Loaded == 0 {
			source = "model"
		}
		used := ""
		if rep.SlidingLogVsTwoCountersUsedMemory > 0 {
			used = fmt.Sprintf(", %.1f× by the growth of used_memory, which also counts the expiry and the hash tables' slots (%.0f B against %.0f B)",
				rep.SlidingLogVsTwoCountersUsedMemory, log.RedisUsedMemoryPerKey, two.RedisUsedMemoryPerKey)
		}
		main.Notes = append(main.Notes, fmt.Sprintf("In Redis the sliding log costs %.1f× the two counters per key by MEMORY USAGE (%.0f B against %.0f B; %.2f orders of magnitude)%s; %s.",
			rep.SlidingLogVsTwoCounters, log.RedisBytesPerKey, two.RedisBytesPerKey, log10(rep.SlidingLogVsTwoCounters), used, source))
	}
	enc := report.Table{
		Title:  fmt.Sprintf("sliding-log sorted set by limit (zset-max-listpack-entries = %d) — Redis: %s", store.ZsetListpackEntries, rep.Redis),
		Header: []string{"limit", "encoding", "Redis\nB per key", "B per\nentry"},
		Names:  []string{"limit", "encoding", "redis_bytes_per_key", "bytes_per_entry"},
		Width:  report.DefaultWidth,
		Keys:   1,
	}
	for _, e := range rep.ZsetEncoding {
		enc.Rows = append(enc.Rows, []string{strconv.FormatInt(e.Limit, 10), e.Encoding,
			strconv.FormatFloat(e.RedisBytesPerKey, 'f', 0, 64), strconv.FormatFloat(e.BytesPerEntry, 'f', 1, 64)})
	}
	return []report.Table{main, enc}
}

func renderMemory(w io.Writer, format string, rep *store.MemoryReport) error {
	tables := memoryTables(rep)
	return writeOutput(w, format, output{
		JSON: rep,
		CSV:  tableCSV(tables[0]), // one table per CSV stream: the per-algorithm one
		Human: func(w io.Writer, markdown bool) error {
			for i, t := range tables {
				tables[i] = uniformSourceDropped(t, i)
			}
			if err := humanTables(tables...)(w, markdown); err != nil {
				return err
			}
			if !markdown && len(rep.Results) > 1 {
				// The answer was above the encoding table: again, where the terminal stops.
				_, err := io.WriteString(w, "\n"+memoryRecap(rep))
				return err
			}
			return nil
		},
	})
}

// memorySourceColumn is the place of redis_source in the per-algorithm table.
const memorySourceColumn = 4

// uniformSourceDropped leaves the Redis figures' source out of the per-algorithm table
// (table number i of memoryTables) when every row shares it: the title says it, and the
// table keeps to 100 columns with every figure of a row on one line. CSV keeps it.
func uniformSourceDropped(t report.Table, i int) report.Table {
	if i != 0 || len(t.Rows) == 0 || t.Names[memorySourceColumn] != "redis_source" {
		return t
	}
	for _, r := range t.Rows {
		if r[memorySourceColumn] != t.Rows[0][memorySourceColumn] {
			return t
		}
	}
	drop := func(xs []string) []string {
		return slices.Delete(slices.Clone(xs), memorySourceColumn, memorySourceColumn+1)
	}
	t.Header, t.Names = drop(t.Header), drop(t.Names)
	rows := make([][]string, len(t.Rows))
	for j, r := range t.Rows {
		rows[j] = drop(r)
	}
	t.Rows = rows
	return t
}

// memoryRecap is memory's answer in a line or two: the least and the most bytes per key,
// in process and in Redis, by algorithm.
func memoryRecap(rep *store.MemoryReport) string {
	span := func(v func(store.MemoryRow) float64) string {
		lo, hi := rep.Results[0], rep.Results[0]
		for _, r := range rep.Results[1:] {
			if v(r) < v(lo) {
				lo = r
			}
			if v(r) > v(hi) {
				hi = r
			}
		}
		return fmt.Sprintf("from %.0f B (%s) to %.0f B (%s)", v(lo), lo.Algorithm, v(hi), hi.Algorithm)
	}
	line := fmt.Sprintf("Recap, per key at its limit: in process %s; in Redis %s.",
		span(func(r store.MemoryRow) float64 { return r.StateBytesPerKey }),
		span(func(r store.MemoryRow) float64 { return r.RedisBytesPerKey }))
	return strings.Join(report.Wrap(line, report.DefaultWidth, "  "), "\n") + "\n"
}

// humanBytes prints a byte count in binary units ("3.4 GiB").
func humanBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return strconv.FormatInt(b, 10) + " B"
	}
	v, i := float64(b), 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + []string{"B", "KiB", "MiB", "GiB", "TiB"}[i]
}

func log10(x float64) float64 { return math.Log10(x) }

func redisLabel(rep *store.MemoryReport) string {
	if rep.Loaded > 0 && rep.Loaded < rep.Keys {
		return fmt.Sprintf("%s (%d clients loaded per algorithm)", rep.Redis, rep.Loaded)
	}
	return rep.Redis
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
