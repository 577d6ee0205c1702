package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// runHeld decides a random stream of requests on a fleet, one by one (batch 0) or held and
// flushed every batch decisions, and returns the decisions and the fleet's figures.
func runHeld(t *testing.T, c Config, alg string, st store.Store, batch int) ([]algorithms.Decision, string) {
	t.Helper()
	c.Epoch, c.Prefix = epoch, "rl:"
	p := algorithms.Policy{Limit: 20, Window: 10 * time.Second}
	f, err := New(c, alg, p, st, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	finish := metered(f, p)
	for k := range 4 {
		f.SetName(uint32(k), fmt.Sprintf("user_%d", k))
	}
	traffic := rand.New(rand.NewPCG(5, 6))
	var out []algorithms.Decision
	done := func(d algorithms.Decision) { out = append(out, d) }
	now := epoch
	for range 1500 {
		now += traffic.Int64N(int64(40 * time.Millisecond))
		key, cost := uint32(traffic.IntN(4)), 1+traffic.Int64N(2)
		if batch == 0 {
			done(f.Allow(key, now, cost))
			continue
		}
		f.Defer(key, now, cost)
		if f.Held() >= batch {
			f.Flush(done)
		}
	}
	f.Flush(done)
	res, err := finish("v")
	if err != nil {
		t.Fatal(err)
	}
	res.Store = "" // the face's name
	return out, fmt.Sprintf("%+v", *res)
}

// Held and flushed decisions are those of deciding one by one, on every placement (the
// ones that cannot pipeline decide at once inside Defer), with scaling, random routing,
// skewed clocks and an outage whose nodes fall back to their guards; on the model and on
// miniredis, whose pipelines carry the clock.
func TestFlushMatchesOneByOne(t *testing.T) {
	for _, placement := range Placements {
		c := Config{
			Nodes: 3, Balancer: "random", Placement: placement,
			Scale:   []Scale{{At: 10 * time.Second, Nodes: 5}},
			Outages: []Outage{{At: 15 * time.Second, For: 5 * time.Second, Policy: "fail-open-local"}},
			Skew:    300 * time.Millisecond, Latency: time.Millisecond, CrashProbability: 0.1,
		}
		for _, alg := range []string{"sliding-window", "gcra", "sliding-log"} {
			if placement == "shared-racy" && !slices.Contains(RacyAlgorithms, alg) ||
				placement == "global-sync" && !slices.Contains(GlobalAlgorithms, alg) {
				continue
			}
			want, wantRes := runHeld(t, c, alg, store.NewModel(), 0)
			for _, batch := range []int{1, 7, 256, -256} {
				// A fresh store each time; a negative batch runs on miniredis.
				var face store.Store = store.NewModel()
				if batch < 0 {
					batch = -batch
					if !slices.Contains([]string{"shared", "two-tier"}, placement) || alg == "gcra" {
						continue // Defer decides at once there: the model has shown it; and keep it quick
					}
					mini, err := store.NewMiniredis()
					if err != nil {
						t.Fatal(err)
					}
					defer mini.Close()
					face = mini
				}
				got, gotRes := runHeld(t, c, alg, face, batch)
				what := fmt.Sprintf("%s %s on %s, batch %d", placement, alg, face.Name(), batch)
				if len(got) != len(want) {
					t.Fatalf("%s: %d decisions, want %d", what, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s: decision %d is %+v, one by one %+v", what, i, got[i], want[i])
					}
				}
				if c.UsesStore() && strings.Contains(gotRes, "OutageAdmitted:0 ") {
					t.Fatalf("%s: no decision fell in the outage: %s", what, gotRes)
				}
				if gotRes != wantRes {
					t.Fatalf("%s: figures differ\n one by one: %s\n held:       %s", what, wantRes, gotRes)
				}
				if mini, ok := face.(*store.Redis); ok && c.Placement == "shared" {
					if n := mini.Pipelines(); n == 0 || n > 10 {
						t.Errorf("%s: %d pipelines for 1500 decisions in batches of 256", what, n)
					}
				}
			}
		}
	}
}
