package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Without a server, Size answers from the model: each algorithm's in-process bytes per
// key from its own limiter brought to the limit, the Redis bytes from ModelBytes and
// ModelUsedMemory, the totals for the keys, the ratios to the two counters, and the
// sorted set's encoding at each limit asked for.
func TestSizeFromTheModel(t *testing.T) {
	p := algorithms.Policy{Limit: 100, Window: time.Minute}
	rep, err := Size(SizeOptions{Keys: 1000, Policy: p, EncodingLimits: []int64{16, 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Keys != 1000 || rep.Limit != 100 || rep.Window != "1m0s" || rep.Loaded != 0 || !strings.HasPrefix(rep.Redis, "model") {
		t.Errorf("report %+v", rep)
	}
	if len(rep.Results) != len(MemoryAlgorithms()) {
		t.Fatalf("%d rows, want one per algorithm of %v", len(rep.Results), MemoryAlgorithms())
	}
	byName := map[string]MemoryRow{}
	for i, r := range rep.Results {
		if r.Algorithm != MemoryAlgorithms()[i] {
			t.Errorf("row %d is %s, want %s", i, r.Algorithm, MemoryAlgorithms()[i])
		}
		byName[r.Algorithm] = r
		b, enc, _ := ModelBytes(r.Algorithm, 100)
		used, _ := ModelUsedMemory(r.Algorithm, 100)
		state, _ := inProcessBytesPerKey(r.Algorithm, p)
		if r.RedisSource != "model" || r.RedisBytesPerKey != float64(b) || r.RedisEncoding != enc || r.RedisUsedMemoryPerKey != float64(used) ||
			r.StateBytesPerKey != state || r.RedisBytesTotal != int64(r.RedisBytesPerKey*1000) || r.StateBytesTotal != int64(state*1000) {
			t.Errorf("%s: %+v", r.Algorithm, r)
		}
	}
	// The in-process state of the counters is a fixed size; the sliding log keeps every
	// admission, 16 bytes each, so 100 of them.
	if fw := byName["fixed-window"].StateBytesPerKey; fw != 16 {
		t.Errorf("fixed window: %g bytes per key in process, want 16", fw)
	}
	if sl := byName["sliding-log"].StateBytesPerKey; sl < 100*16 {
		t.Errorf("sliding log: %g bytes per key in process, want at least 100 entries of 16", sl)
	}
	two, log := byName["sliding-window"], byName["sliding-log"]
	if two.VsTwoCounters != 1 || log.VsTwoCounters != log.RedisBytesPerKey/two.RedisBytesPerKey ||
		rep.SlidingLogVsTwoCounters != log.VsTwoCounters ||
		rep.SlidingLogVsTwoCountersUsedMemory != log.RedisUsedMemoryPerKey/two.RedisUsedMemoryPerKey {
		t.Errorf("ratios: %g %g %g %g", two.VsTwoCounters, log.VsTwoCounters, rep.SlidingLogVsTwoCounters, rep.SlidingLogVsTwoCountersUsedMemory)
	}
	if len(rep.ZsetEncoding) != 2 || rep.ZsetEncoding[0].Encoding != "listpack" || rep.ZsetEncoding[1].Encoding != "skiplist" ||
		rep.ZsetEncoding[1].BytesPerEntry != rep.ZsetEncoding[1].RedisBytesPerKey/1000 {
		t.Errorf("encodings %+v", rep.ZsetEncoding)
	}

	// Without the two counters there is no ratio to them.
	rep, err = Size(SizeOptions{Keys: 10, Policy: p, Algorithms: []string{"gcra", "sliding-log"}})
	if err != nil || len(rep.Results) != 2 || rep.Results[0].VsTwoCounters != 0 || rep.SlidingLogVsTwoCounters != 0 {
		t.Errorf("gcra and the log: %+v, %v", rep, err)
	}
}

func TestSizeRefusesWhatItCannotSize(t *testing.T) {
	p := algorithms.Policy{Limit: 100, Window: time.Minute}
	for _, tt := range []struct {
		o    SizeOptions
		want string
	}{
		{SizeOptions{Keys: 0, Policy: p}, "keys must be positive, got 0"},
		{SizeOptions{Keys: 5, Policy: algorithms.Policy{Limit: 100, Window: time.Nanosecond}}, ""},
		{SizeOptions{Keys: 5, Policy: p, Algorithms: []string{"fixed-window", "nope"}}, `unknown algorithm "nope"`},
		{SizeOptions{Keys: 5, Policy: p, EncodingLimits: []int64{0}}, "sliding-log at limit 0:"},
	} {
		_, err := Size(tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one containing %q", tt.o, err, tt.want)
		}
	}
}

// On a real server Size measures: each algorithm's clients are loaded under the prefix,
// measured and deleted, a sample standing for all the keys; the encodings too. (The
// model is calibrated on short key names; these carry the test's long prefix, so only
// the measurements' proportions are checked: two counters take about twice one, and a log of
// twenty entries more than two counters.) TestSettle covers the pauses between.
func TestSizeMeasuresARealServer(t *testing.T) {
	r := realRedis(t)
	prefix := testPrefix(t, 1)
	defer deleteUnder(t, r, prefix)
	p := algorithms.Policy{Limit: 20, Window: time.Minute}
	deleted := 0
	rep, err := Size(SizeOptions{Keys: 500, Policy: p, Redis: r, Prefix: prefix, Load: 50, EncodingLimits: []int64{16, 200},
		MeasureHooks: MeasureHooks{Context: context.Background(), Deleted: func(n int) { deleted += n }}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Redis, "measured on Redis ") || rep.Loaded != 50 || len(rep.Results) != len(MemoryAlgorithms()) {
		t.Fatalf("report %+v", rep)
	}
	bytes := map[string]float64{}
	for _, row := range rep.Results {
		bytes[row.Algorithm] = row.RedisBytesPerKey
		if row.RedisSource != "measured" || row.RedisClientsLoaded != 50 || row.RedisBytesPerKey <= 0 || row.RedisBytesTotal != int64(row.RedisBytesPerKey*500) {
			t.Errorf("%s: %+v", row.Algorithm, row)
		}
	}
	if two := bytes["sliding-window"] / bytes["fixed-window"]; two < 1.9 || two > 2.1 || bytes["sliding-log"] <= bytes["sliding-window"] {
		t.Errorf("measured bytes per key %v", bytes)
	}
	if len(rep.ZsetEncoding) != 2 || rep.ZsetEncoding[0].Encoding != "listpack" || rep.ZsetEncoding[1].Encoding != "skiplist" {
		t.Errorf("encodings %+v", rep.ZsetEncoding)
	}
	if deleted == 0 {
		t.Error("no measurement deleted the keys it wrote")
	}
	if keys, _ := r.Keys(prefix); len(keys) != 0 {
		t.Errorf("%d keys left under the prefix", len(keys))
	}
	// A prefix that holds keys is not measured over.
	if err := r.Client().Set(context.Background(), prefix+"someone's", 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Size(SizeOptions{Keys: 5, Policy: p, Redis: r, Prefix: prefix}); err == nil {
		t.Error("Size measured under a prefix that holds keys")
	}
}
