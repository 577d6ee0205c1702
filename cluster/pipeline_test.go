package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
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
	for _, placement := range Placements() {
		c := Config{
			Nodes: 3, Balancer: "random", Placement: placement,
			Scale:   []Scale{{At: 10 * time.Second, Nodes: 5}},
			Outages: []Outage{{At: 15 * time.Second, For: 5 * time.Second, Policy: "fail-open-local"}},
			Skew:    300 * time.Millisecond, Latency: time.Millisecond, CrashProbability: 0.1,
		}
		if placement == "global-sync" {
			c.SyncTo = "store" // the target with store calls; to owners it decides at once
		}
		for _, alg := range []string{"sliding-window", "gcra", "sliding-log"} {
			if placement == "shared-racy" && !slices.Contains(RacyAlgorithms(), alg) ||
				placement == "global-sync" && !slices.Contains(GlobalAlgorithms(), alg) {
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

// gatedStore is the model behind a Batcher whose batches each wait for the test's word
// (gates, by the time of a batch's first call), and which records the order its calls run.
type gatedStore struct {
	store.Store
	gates map[int64]chan struct{}
	mu    sync.Mutex
	ran   []int64 // the times of the calls, in the order they ran
}

func (g *gatedStore) EvalBatch(calls []store.Call) ([][]int64, error) {
	<-g.gate(calls[0].Now)
	out, err := store.EvalBatch(g.Store, calls)
	g.mu.Lock()
	for _, c := range calls {
		g.ran = append(g.ran, c.Now)
	}
	g.mu.Unlock()
	return out, err
}

// gate is the gate of the batch whose first call is at now, made on first use.
func (g *gatedStore) gate(now int64) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[now] == nil {
		g.gates[now] = make(chan struct{}, 1)
	}
	return g.gates[now]
}

// A batch sent while the one before is on its way runs after it, whichever the store
// would take first, and Receive hands out a batch's decisions only once the store has
// answered it: the decisions are those of deciding one by one, and the store saw every
// call in the order Defer took them.
func TestSendKeepsOrderWhileBatchesAreOnTheirWay(t *testing.T) {
	p := algorithms.Policy{Limit: 20, Window: 10 * time.Second}
	c := Config{Nodes: 3, Balancer: "random", Placement: "shared", Epoch: epoch, Prefix: "rl:"}
	type req struct {
		key       uint32
		now, cost int64
	}
	traffic := rand.New(rand.NewPCG(7, 8))
	var reqs []req
	now := epoch
	for range 600 {
		now += traffic.Int64N(int64(10 * time.Millisecond))
		reqs = append(reqs, req{uint32(traffic.IntN(3)), now, 1 + traffic.Int64N(2)})
	}
	fleet := func(st store.Store) *Fleet {
		f, err := New(c, "sliding-window", p, st, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		for k := range 3 {
			f.SetName(uint32(k), fmt.Sprintf("user_%d", k))
		}
		return f
	}
	one := fleet(store.NewModel())
	var want []algorithms.Decision
	for _, r := range reqs {
		want = append(want, one.Allow(r.key, r.now, r.cost))
	}

	gated := &gatedStore{Store: store.NewModel(), gates: map[int64]chan struct{}{}}
	f := fleet(gated)
	var starts []int64 // each batch's first call
	var sent []int     // the calls sent up to each batch, that one's included
	for i := 0; i < len(reqs); i += 100 {
		for _, r := range reqs[i : i+100] {
			f.Defer(r.key, r.now, r.cost)
		}
		starts = append(starts, f.calls[0].Now)
		sent = append(sent, len(f.calls))
		if b := len(sent); b > 1 {
			sent[b-1] += sent[b-2]
		}
		f.Send()
	}
	// The batches are let go once the fleet waits for them, the last first: were it on
	// its way before the others came back, its calls would run first.
	go func() {
		for i := len(starts) - 1; i >= 0; i-- {
			gated.gate(starts[i]) <- struct{}{}
		}
	}()
	var got []algorithms.Decision
	for b := 0; f.Out() > 0; b++ {
		f.Receive(func(d algorithms.Decision) {
			gated.mu.Lock()
			defer gated.mu.Unlock()
			if len(gated.ran) < sent[b] {
				t.Fatalf("batch %d handed out a decision when the store had run %d calls, %d sent up to it", b, len(gated.ran), sent[b])
			}
			got = append(got, d)
		})
	}
	if !slices.Equal(got, want) {
		t.Fatal("the decisions of batches sent while others were on their way differ from one by one")
	}
	if !slices.IsSorted(gated.ran) || len(gated.ran) != sent[len(sent)-1] {
		t.Fatalf("the store ran %d calls of %d, or out of the order they were sent", len(gated.ran), sent[len(sent)-1])
	}
}
