//go:build unix

package external

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// BenchmarkLuaEmbedded runs examples/lua/fixed_window.lua (a counter per key and window,
// each with a TTL) on the embedded miniredis as a run drives it, one decision per
// iteration, 100 µs of virtual time apart, over keys clients in turn; every client has
// made a request before the clock starts, so the store holds keys counters (and their
// TTLs) from the first timed call. Its peer "floor/keys=10" runs a script that only
// returns 1: what a call costs beside the script's own commands (the Lua state kept from
// call to call, its check that the call left it as built, the TTL clock).
// The garbage collector's target is raised as a run raises it (RaiseGC). Beside
// decisions/s (wall time) it reports the process's CPU time per decision, which a
// machine shared with other work moves less: go test -run '^$' -bench LuaEmbedded ./external
func BenchmarkLuaEmbedded(b *testing.B) {
	floor := filepath.Join(b.TempDir(), "floor.lua")
	if err := os.WriteFile(floor, []byte("return 1\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, script string
		keys         int
	}{
		{"keys=10", example("fixed_window.lua"), 10},
		{"keys=100000", example("fixed_window.lua"), 100000},
		{"floor/keys=10", floor, 10},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkLua(b, c.script, c.keys) })
	}
}

func benchmarkLua(b *testing.B, script string, keys int) {
	defer RaiseGC()() // as rlsim does while scripts run on the embedded miniredis
	l, err := NewLua(script, "")
	if err != nil {
		b.Fatal(err)
	}
	lim, err := l.New(algorithms.Policy{Limit: 10, Window: time.Second, Burst: 10})
	if err != nil {
		b.Fatal(err)
	}
	x := lim.(Limiter)
	defer x.Close()
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	const step = int64(100 * time.Microsecond)
	for k := range keys {
		x.Allow(uint32(k), now, 1)
		now += step
	}
	if err := x.Err(); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		x.Allow(uint32(i%keys), now, 1)
		now += step
		i++
	}
	cpu := cpuTime() - cpu0
	if err := x.Err(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(i), "cpu-ns/op")
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
