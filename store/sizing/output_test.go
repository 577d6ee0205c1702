package sizing

import (
	"slices"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/store"
)

// A used_memory growth another client disturbed is shown as missing, with the reason,
// and the ratio that would need it is left out of the note.
func TestMemoryTablesDisturbedUsedMemory(t *testing.T) {
	rep := &store.MemoryReport{Keys: 10, Limit: 100, Window: "1m0s", Redis: "measured on Redis 7.0.15", Loaded: 10,
		SlidingLogVsTwoCounters: 20.8,
		Results: []store.MemoryRow{
			{Algorithm: "sliding-window", RedisBytesPerKey: 176, RedisUsedMemoryPerKey: 276, RedisSource: "measured"},
			{Algorithm: "sliding-log", RedisBytesPerKey: 3656, RedisUsedMemoryDisturbed: true, RedisSource: "measured"},
		}}
	tables := Tables(rep)
	out := strings.Join(tables[0].Notes, " ")
	if !strings.Contains(out, "used_memory did not grow while sliding-log loaded") ||
		!strings.Contains(out, "(3656 B against 176 B; 1.32 orders of magnitude); measured.") ||
		strings.Contains(out, "by the growth of used_memory") {
		t.Errorf("the note does not say which figure is missing and why:\n%s", out)
	}
	rows := tables[0].Rows
	if rows[0][3] != "276" || rows[1][3] != "-" {
		t.Errorf("used_memory cells %q, %q; want 276 and -", rows[0][3], rows[1][3])
	}
}

// The human form leaves out the Redis figures' source when every row shares it, and
// keeps it when the rows differ; the full tables (CSV) always keep it.
func TestMemoryHumanTablesDropAUniformSource(t *testing.T) {
	rep := &store.MemoryReport{Keys: 10, Limit: 100, Window: "1m0s", Redis: "model",
		Results: []store.MemoryRow{{Algorithm: "gcra", RedisSource: "model"}, {Algorithm: "sliding-log", RedisSource: "model"}}}
	if got := HumanTables(rep)[0]; len(got.Names) != len(Tables(rep)[0].Names)-1 || slices.Contains(got.Names, "redis_source") || len(got.Rows[0]) != len(got.Names) {
		t.Errorf("a shared source is kept: %v", got.Names)
	}
	rep.Results[1].RedisSource = "measured"
	if got := HumanTables(rep)[0]; !slices.Contains(got.Names, "redis_source") {
		t.Errorf("differing sources dropped: %v", got.Names)
	}
	if !slices.Contains(Tables(rep)[0].Names, "redis_source") {
		t.Error("the full table lacks redis_source")
	}
}
