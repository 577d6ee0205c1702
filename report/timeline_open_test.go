package report

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

// An open timeline, told its horizon only at the end, is the timeline a recorder that knew
// the horizon from the start records, bin for bin: for runs from a second to years (every
// width, and the merging of base bins as the finest widths leave), on one collector and on
// the members of a group, with busy keys, quiet spells and refusals.
func TestOpenTimelineIsTheTimelineOfTheHorizon(t *testing.T) {
	lim, err := algorithms.New("fixed-window", algorithms.Policy{Limit: 5, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		span, window time.Duration
		requests     int
	}{
		{time.Second, 100 * time.Millisecond, 3000},
		{7 * time.Second, time.Second, 4000},
		{3 * time.Minute, time.Minute, 5000},
		{47 * time.Minute, 10 * time.Second, 5000},
		{26 * time.Hour, time.Hour, 5000},
		{3 * 365 * 24 * time.Hour, 24 * time.Hour, 5000},
	} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s-%d", tt.span, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 9))
				const members = 3
				known := make([]*Collector, members)
				open := make([]*Collector, members)
				for i := range known {
					known[i] = NewCollector(4, int64ToDuration(tt.window), time.Second)
					open[i] = NewCollector(4, int64ToDuration(tt.window), time.Second)
				}
				gk, _ := NewGroup(known)
				gopen, _ := NewGroup(open)
				alone, aloneOpen := NewCollector(4, tt.window, time.Second), NewCollector(4, tt.window, time.Second)
				// Arrival times in order: bursts and quiet spells over the span.
				times := make([]int64, tt.requests)
				for i := range times {
					times[i] = rng.Int64N(int64(tt.span))
					if rng.IntN(4) == 0 && i > 0 {
						times[i] = times[i-1] // same instant
					}
				}
				slicesSort(times)
				horizon := time.Duration(times[len(times)-1]) + tt.window
				for i := range known {
					known[i].RecordTimeline(horizon)
					open[i].RecordOpenTimeline(tt.window)
				}
				alone.RecordTimeline(horizon)
				aloneOpen.RecordOpenTimeline(tt.window)
				delays := make([]time.Duration, members)
				for _, at := range times {
					key := uint32(rng.IntN(6))
					if rng.IntN(3) == 0 {
						key = uint32(rng.IntN(3000)) // a cold key
					}
					admitted := rng.Uint64() & (1<<members - 1)
					gk.Observe(key, at, 1, traffic.Legit, admitted, delays)
					gopen.Observe(key, at, 1, traffic.Legit, admitted, delays)
					d := algorithms.Decision{Allowed: admitted&1 != 0}
					alone.Observe(key, at, 1, traffic.Legit, d)
					aloneOpen.Observe(key, at, 1, traffic.Legit, d)
				}
				check := func(name string, a, b *Collector) {
					b.CloseTimeline(horizon)
					want, got := a.Result(lim).Timeline, b.Result(lim).Timeline
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s: the open timeline differs: bin %s (%d bins) against %s (%d bins)", name, got.Bin, len(got.Admitted), want.Bin, len(want.Admitted))
						for i := range min(len(got.WindowAdmitted), len(want.WindowAdmitted)) {
							if got.WindowAdmitted[i] != want.WindowAdmitted[i] || got.Admitted[i] != want.Admitted[i] {
								t.Errorf("first difference, bin %d: %d/%d against %d/%d", i, got.Admitted[i], got.WindowAdmitted[i], want.Admitted[i], want.WindowAdmitted[i])
								break
							}
						}
					}
				}
				for i := range known {
					check(fmt.Sprintf("member %d", i), known[i], open[i])
				}
				check("alone", alone, aloneOpen)
			})
		}
	}
}

func int64ToDuration(d time.Duration) time.Duration { return d }

func slicesSort(xs []int64) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// Windows that give back an emptied key's ring judge every request as windows that keep
// it, on one collector and in a group; and once a crowd of keys has gone quiet they hold
// less, the rings waiting in the pool for the next keys to spill.
func TestReleasedWindowsJudgeAlikeAndHoldLess(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	mk := func(release bool) (*Group, []*Collector, *Collector) {
		cols := []*Collector{NewCollector(3, int64ToDuration(time.Second), time.Second), NewCollector(3, time.Second, time.Second)}
		g, _ := NewGroup(cols)
		alone := NewCollector(3, time.Second, time.Second)
		if release {
			g.ReleaseIdleWindows()
			alone.ReleaseIdleWindows()
		}
		return g, cols, alone
	}
	keep, keepCols, keepAlone := mk(false)
	rel, relCols, relAlone := mk(true)
	delays := make([]time.Duration, 2)
	at := int64(0)
	for i := range 60000 {
		// A crowd of 2000 keys for the first half, then ten keys only.
		key := uint32(rng.IntN(2000))
		if i >= 30000 {
			key = uint32(rng.IntN(10))
		}
		at += rng.Int64N(int64(time.Millisecond))
		admitted := rng.Uint64() & 3
		if a, b := keep.Observe(key, at, 1, traffic.Legit, admitted, delays), rel.Observe(key, at, 1, traffic.Legit, admitted, delays); a != b {
			t.Fatalf("request %d: verdicts %b and %b", i, a, b)
		}
		d := algorithms.Decision{Allowed: admitted&1 != 0}
		if a, b := keepAlone.Observe(key, at, 1, traffic.Legit, d), relAlone.Observe(key, at, 1, traffic.Legit, d); a != b {
			t.Fatalf("request %d, alone: verdicts %v and %v", i, a, b)
		}
	}
	lim, _ := algorithms.New("fixed-window", algorithms.Policy{Limit: 3, Window: time.Second})
	for i := range keepCols {
		if a, b := keepCols[i].Result(lim), relCols[i].Result(lim); !reflect.DeepEqual(a, b) {
			t.Errorf("member %d: %+v against %+v", i, b, a)
		}
	}
	if a, b := keepAlone.Result(lim), relAlone.Result(lim); !reflect.DeepEqual(a, b) {
		t.Errorf("alone: %+v against %+v", b, a)
	}
	// The crowd's keys that came back spilled and gave their rings back; keeping them,
	// the windows hold every ring the crowd grew.
	if kept, released := keepCols[0].TrackerBytes(), relCols[0].TrackerBytes(); released >= kept {
		t.Errorf("released windows hold %d bytes, kept ones %d", released, kept)
	}
}

// The shards of a run, each holding the keys k % n of its own, merge into the busiest-window
// column of the one run over all keys, bin for bin: over 2, 3 and 4 shards, for runs of
// several lengths, on the members of a group, with bursts that leave the window while
// smaller ones stay, keys that tie at one instant and refusals.
func TestShardWindowsMergeIntoTheColumnOfOneRun(t *testing.T) {
	for _, tt := range []struct {
		span, window time.Duration
	}{
		{5 * time.Second, time.Second},
		{3 * time.Minute, time.Minute},
		{26 * time.Hour, time.Hour},
	} {
		for seed := range uint64(3) {
			rng := rand.New(rand.NewPCG(seed, 25))
			type req struct {
				key uint32
				at  int64
				adm uint64
			}
			var reqs []req
			// Bursts of 1 to 30 requests from 300 keys, some at one instant.
			for len(reqs) < 4000 {
				key, at := uint32(rng.IntN(300)), rng.Int64N(int64(tt.span))
				for range 1 + rng.IntN(30) {
					reqs = append(reqs, req{key, at, rng.Uint64() & 3})
					if rng.IntN(3) == 0 {
						at += rng.Int64N(int64(tt.window) / 10)
					}
				}
			}
			slices.SortStableFunc(reqs, func(a, b req) int { return cmp.Compare(a.at, b.at) })
			horizon := time.Duration(reqs[len(reqs)-1].at) + tt.window
			run := func(n, k int) []CollectorPartial {
				cols := []*Collector{NewCollector(10, tt.window, time.Second), NewCollector(10, tt.window, time.Second)}
				for _, c := range cols {
					c.RecordOpenTimeline(tt.window)
					if n > 1 {
						c.RecordShardWindow()
					}
				}
				g, _ := NewGroup(cols)
				delays := make([]time.Duration, len(cols))
				for i, r := range reqs {
					if int(r.key)%n == k {
						g.TimelineOrder(int64(i))
						g.Observe(r.key, r.at, 1, traffic.Legit, r.adm, delays)
					}
				}
				var out []CollectorPartial
				for _, c := range cols {
					c.CloseTimeline(horizon)
					out = append(out, c.Partial())
				}
				return out
			}
			one := run(1, 0)
			// Parts without the record (not a shard's) cannot be merged into one run's column.
			if _, err := MergeCollectors("sliding-log", LimiterTotals{}, []CollectorPartial{one[0], run(2, 1)[0]}); err == nil || !strings.Contains(err.Error(), "no record of their busiest keys") {
				t.Errorf("a part without its busiest keys' record: %v", err)
			}
			for _, n := range []int{2, 3, 4} {
				shards := make([][]CollectorPartial, n)
				for k := range n {
					shards[k] = run(n, k)
				}
				for m := range one {
					var parts []CollectorPartial
					for k := n - 1; k >= 0; k-- {
						parts = append(parts, shards[k][m])
					}
					got, err := MergeCollectors("sliding-log", LimiterTotals{}, parts)
					if err != nil {
						t.Fatal(err)
					}
					want := one[m].Timeline.WindowAdmitted
					if !slices.Equal(got.Timeline.WindowAdmitted, want) {
						for i := range want {
							if got.Timeline.WindowAdmitted[i] != want[i] {
								t.Errorf("%s seed %d, %d shards, member %d: bin %d of %d (%s) holds %d, one run %d", tt.span, seed, n, m, i, len(want), got.Timeline.Bin, got.Timeline.WindowAdmitted[i], want[i])
								break
							}
						}
					}
				}
			}
		}
	}
}
