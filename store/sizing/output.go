// Package sizing is the output model of `rlsim memory`: the tables and the recap of what
// the store's keys of each algorithm take, in process and in Redis. It lives apart from
// store so that the store, which decides, links nothing of the report that measures.
package sizing

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

// Tables are the tables of `rlsim memory`, every column of each: the bytes per key of
// every algorithm, in process and in Redis (the one --format csv writes), then the
// sliding log's sorted set by limit. HumanTables is the form people read.
func Tables(rep *store.MemoryReport) []report.Table {
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
			r.RedisSource, r.RedisEncoding, report.HumanBytes(r.StateBytesTotal), report.HumanBytes(r.RedisBytesTotal), vs,
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
			rep.SlidingLogVsTwoCounters, log.RedisBytesPerKey, two.RedisBytesPerKey, math.Log10(rep.SlidingLogVsTwoCounters), used, source))
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

// HumanTables are Tables as people read them: the per-algorithm table leaves out the
// Redis figures' source when every row shares it (the title says it), so that it keeps
// to 100 columns with every figure of a row on one line. CSV keeps it.
func HumanTables(rep *store.MemoryReport) []report.Table {
	tables := Tables(rep)
	tables[0] = uniformSourceDropped(tables[0])
	return tables
}

// memorySourceColumn is the place of redis_source in the per-algorithm table.
const memorySourceColumn = 4

// uniformSourceDropped is t, the per-algorithm table, without its redis_source column
// when every row holds the same source.
func uniformSourceDropped(t report.Table) report.Table {
	if len(t.Rows) == 0 || t.Names[memorySourceColumn] != "redis_source" {
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

// Recap is memory's answer in a line or two, wrapped to the default width: the least and
// the most bytes per key, in process and in Redis, by algorithm. It needs a result.
func Recap(rep *store.MemoryReport) string {
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

// redisLabel is where the Redis figures came from, with how many clients were loaded
// when not every key was.
func redisLabel(rep *store.MemoryReport) string {
	if rep.Loaded > 0 && rep.Loaded < rep.Keys {
		return fmt.Sprintf("%s (%d clients loaded per algorithm)", rep.Redis, rep.Loaded)
	}
	return rep.Redis
}
