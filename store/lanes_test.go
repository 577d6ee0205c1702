package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// lanesFor keeps every client's calls on one lane, in order, covers every call once, and
// refuses to split what must stay in one pipeline.
func TestLanesForKeepsEachClientInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := &Redis{}
	r.SetLanes(4)
	calls := make([]Call, 200)
	for i := range calls {
		calls[i] = Call{Client: fmt.Sprint("c", rng.IntN(30)), Now: int64(i)}
	}
	lanes := r.lanesFor(calls)
	if len(lanes) < 2 {
		t.Fatalf("%d lanes for 200 calls of 30 clients", len(lanes))
	}
	laneOfClient := map[string]int{}
	var all []int
	for l, lane := range lanes {
		if !slices.IsSorted(lane) {
			t.Fatalf("lane %d out of order: %v", l, lane)
		}
		for _, i := range lane {
			if prev, ok := laneOfClient[calls[i].Client]; ok && prev != l {
				t.Fatalf("client %s on lanes %d and %d", calls[i].Client, prev, l)
			}
			laneOfClient[calls[i].Client] = l
		}
		all = append(all, lane...)
	}
	slices.Sort(all)
	for i, v := range all {
		if v != i {
			t.Fatalf("calls %v are not each on one lane", all)
		}
	}
	if got := r.lanesFor(calls[:minLaneCalls*2-1]); got != nil {
		t.Errorf("a batch of %d calls split into %d lanes", minLaneCalls*2-1, len(got))
	}
	unnamed := slices.Clone(calls)
	unnamed[7].Client = ""
	if got := r.lanesFor(unnamed); got != nil {
		t.Error("a batch with a call of no client was split")
	}
	r.mini = nil
	r.SetLanes(1)
	if got := r.lanesFor(calls); got != nil {
		t.Error("one lane split a batch")
	}
}

// laneBatches is a trace cut into batches whose calls are all at one instant, over 40
// clients of several algorithms: what an embedded server may run on lanes.
func laneBatches(rng *rand.Rand, batches int) [][]step {
	now := int64(1.7e18)
	var out [][]step
	for range batches {
		now += rng.Int64N(int64(3 * time.Second))
		var b []step
		for range 40 + rng.IntN(80) {
			b = append(b, step{algorithm: Algorithms[rng.IntN(len(Algorithms))], key: fmt.Sprint("u", rng.IntN(40)), at: Now(now), cost: 1 + rng.Int64N(3)})
		}
		out = append(out, b)
	}
	return out
}

// runLaneBatches decides batches on st through EvalBatch and returns one line per
// decision; between, when not nil, runs before every batch but the first.
func runLaneBatches(t *testing.T, st Store, p algorithms.Policy, prefix string, batches [][]step, between func()) []string {
	t.Helper()
	f := newFaceRun(st, p, prefix, NodeClock, 0)
	var out []string
	for b, batch := range batches {
		if b > 0 && between != nil {
			between()
		}
		calls := make([]Call, len(batch))
		for i, s := range batch {
			calls[i] = f.limiter(t, s.algorithm).Call(s.key, s.at, s.cost)
		}
		replies, err := EvalBatch(st, calls)
		if err != nil {
			t.Fatalf("%s: batch %d: %v", st.Name(), b, err)
		}
		for i, s := range batch {
			r, err := ReplyOf(calls[i].Script, replies[i])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d.%d %s %s cost=%d -> %v %d", b, i, s.algorithm, s.key, s.cost, r.Allowed, r.Remaining))
		}
	}
	return out
}

// Batches at one instant go on lanes on miniredis too: the same decisions as the model,
// through scripts the server loses between batches (each lane loads them again).
func TestEvalBatchOnLanesMatchesModelOnMiniredis(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 21))
		p := randomPolicy(rng)
		batches := laneBatches(rng, 12)
		want := runLaneBatches(t, NewModel(), p, "rl:", batches, nil)
		mini := miniFace(t)
		mini.loadEvery = false // load on first use only, as on a real server
		n := 0
		flush := func() {
			if n++; n%3 == 0 {
				mini.Client().ScriptFlush(context.Background())
			}
		}
		got := runLaneBatches(t, mini, p, "rl:", batches, flush)
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: miniredis on lanes", seed, p), want, got)
		if mini.split.Load() != int64(len(batches)) || mini.reloads.Load() == 0 {
			t.Fatalf("%d of %d batches split, %d reloads: the lanes went untested", mini.split.Load(), len(batches), mini.reloads.Load())
		}
	}
}

// A real server decides on lanes as on one pipeline and as the model, whatever the times.
func TestEvalBatchOnLanesOnRealRedis(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		p := randomPolicy(rng)
		skew := randomSkew(rng, p)
		trace := scriptsOnly(randomTrace(rng, p, 600, skew))
		clock := []Clock{NodeClock, StoreClock}[seed%2]
		keep := keepFor(skew)
		want := runTrace(t, NewModel(), p, "rl:", trace, clock, keep)
		one, lanes := realRedis(t), realRedis(t)
		one.SetLanes(1)
		onePrefix, lanesPrefix := testPrefix(t, seed)+"one:", testPrefix(t, seed)+"lanes:"
		gotOne := runBatched(t, one, p, onePrefix, trace, clock, keep, rand.New(rand.NewPCG(seed, 1)), 256, nil)
		gotLanes := runBatched(t, lanes, p, lanesPrefix, trace, clock, keep, rand.New(rand.NewPCG(seed, 1)), 256, nil)
		deleteUnder(t, one, onePrefix)
		deleteUnder(t, lanes, lanesPrefix)
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: one pipeline", seed, p), want, gotOne)
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: lanes", seed, p), want, gotLanes)
		if one.split.Load() != 0 || lanes.split.Load() == 0 {
			t.Fatalf("batches split: %d on one lane, %d on %d lanes", one.split.Load(), lanes.split.Load(), DefaultLanes)
		}
	}
}

// The texts of the arguments are remembered, not formatted again, and a value that
// shares a slot with another is never sent as the other.
func TestArgTextsAreTheIntegers(t *testing.T) {
	var a argTexts
	for _, v := range []int64{0, 1, 100, 64, -1, 60000000, 1 << 62, -1 << 63, 100, 164, 36} {
		if got := a.text(v); got != fmt.Sprint(v) {
			t.Fatalf("text(%d) = %v", v, got)
		}
	}
	a.text(100)
	if allocs := testing.AllocsPerRun(100, func() { a.text(100) }); allocs != 0 {
		t.Fatalf("%v allocations for a text sent lately", allocs)
	}
}
