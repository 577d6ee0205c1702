package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
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
			b = append(b, step{algorithm: Algorithms()[rng.IntN(len(Algorithms()))], key: fmt.Sprint("u", rng.IntN(40)), at: Now(now), cost: 1 + rng.Int64N(3)})
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

// runStreamed replays trace on st by clock through a Stream, in batches of random sizes (1
// to maxBatch) of which up to depth are on their way at once, and returns one line per
// decision, as runBatched does. between, when not nil, runs before every batch but the
// first and returns what to send each call's script as (nil: as it is).
func runStreamed(t *testing.T, st Store, p algorithms.Policy, prefix string, trace []step, clock Clock, keep time.Duration, rng *rand.Rand, maxBatch, depth int, between func() func(*Script) *Script) []string {
	t.Helper()
	f := newFaceRun(st, p, prefix, clock, keep)
	type out struct {
		start   int
		calls   []Call
		pending *Pending
	}
	var away []out
	var lines []string
	receive := func() {
		b := away[0]
		away = away[1:]
		replies, err := b.pending.Wait()
		if err != nil {
			t.Fatalf("%s: batch at step %d: %v", st.Name(), b.start, err)
		}
		for i, c := range b.calls {
			s := trace[b.start+i]
			r, err := ReplyOf(c.Script, replies[i])
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%d %s %s store=%d node=%d cost=%d -> %v %d retry=%s reset=%s", b.start+i, s.algorithm, s.key, s.at.Store, s.at.Node, s.cost, r.Allowed, r.Remaining, r.RetryAfter, r.Reset))
		}
	}
	stream := NewStream(st)
	var sendAs func(*Script) *Script
	for start := 0; start < len(trace); {
		n := min(1+rng.IntN(maxBatch), len(trace)-start)
		if start > 0 && between != nil {
			sendAs = between()
		}
		calls := make([]Call, n)
		for i, s := range trace[start : start+n] {
			calls[i] = f.limiter(t, s.algorithm).Call(s.key, s.at, s.cost)
			if sendAs != nil {
				calls[i].Script = sendAs(calls[i].Script)
			}
		}
		away = append(away, out{start, calls, stream.Send(calls)})
		if len(away) >= depth {
			receive()
		}
		start += n
	}
	for len(away) > 0 {
		receive()
	}
	return lines
}

// hotTrace is a trace in which one client makes most calls, in bursts at one instant: the
// batches on their way at once all hold its calls, and one lane carries most of each.
func hotTrace(rng *rand.Rand, n int) []step {
	now := int64(1.7e18)
	var out []step
	for len(out) < n {
		now += rng.Int64N(int64(50 * time.Millisecond))
		for range 1 + rng.IntN(40) {
			key := "hot"
			if rng.IntN(4) == 0 {
				key = fmt.Sprint("u", rng.IntN(12))
			}
			out = append(out, step{algorithm: Algorithms()[rng.IntN(len(Algorithms()))], key: key, at: Now(now), cost: 1 + rng.Int64N(2)})
		}
	}
	return out[:n]
}

// Batches streamed several at a time decide as the model does, on miniredis (each batch
// after the one before) and on a real server on one lane and on DefaultLanes, where a
// lane's pipeline leaves as soon as its own last one is back: were a client's calls of a
// batch to reach the server before its calls of the batch before, the hot client's
// remaining counts would come out of order. On the real server the scripts are lost every
// few batches (a new generation of them, as TestEvalBatchOnRealRedis does), so lanes load
// them again while the others' pipelines are on their way.
func TestStreamMatchesModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 41))
		p := algorithms.Policy{Limit: 200 + rng.Int64N(200), Window: time.Duration(1+rng.IntN(5)) * time.Second, Burst: 250}
		trace := hotTrace(rng, 1500)
		clock := []Clock{NodeClock, StoreClock}[seed%2]
		want := runTrace(t, NewModel(), p, "rl:", trace, clock, 0)
		mini := miniFace(t)
		got := runStreamed(t, mini, p, "rl:", trace, clock, 0, rand.New(rand.NewPCG(seed, 1)), 64, 3, nil)
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: miniredis, streamed", seed, p), want, got)
		if os.Getenv("RLSIM_REDIS_URL") == "" {
			continue
		}
		for _, lanes := range []int{1, DefaultLanes} {
			real := realRedis(t)
			real.SetLanes(lanes)
			prefix := fmt.Sprintf("%slanes%d:", testPrefix(t, seed), lanes)
			batches := 0
			var gen map[*Script]*Script
			lose := func() func(*Script) *Script {
				if batches++; batches%5 == 0 {
					gen = map[*Script]*Script{}
					n := int(streamGenerations.Add(1))
					for _, s := range Scripts() {
						gen[s] = unseen(s, -n) // SHAs no other test of this process makes
						real.loaded[gen[s]] = true
					}
				}
				if gen == nil {
					return nil
				}
				return func(s *Script) *Script { return gen[s] }
			}
			t.Cleanup(func() { deleteUnder(t, real, prefix) }) // also when the test fails
			got := runStreamed(t, real, p, prefix, trace, clock, 0, rand.New(rand.NewPCG(seed, 1)), 300, 3, lose)
			compareDecisions(t, fmt.Sprintf("seed %d policy %s: real Redis on %d lanes, streamed", seed, p, lanes), want, got)
			if real.reloads.Load() == 0 || lanes > 1 && real.split.Load() == 0 {
				t.Fatalf("%d lanes: %d reloads, %d batches split: the test proves less than it claims", lanes, real.reloads.Load(), real.split.Load())
			}
		}
	}
}

// streamGenerations numbers the generations of scripts of TestStreamMatchesModel (as -n)
// and TestEvalBatchOnRealRedis (as n), so that each has SHAs of its own however often the
// tests run.
var streamGenerations atomic.Int64

// A batch that fails stops the stream: the batches sent after it are not sent (or, on
// lanes that had already left, finish), every Wait returns, and no goroutine is left.
func TestStreamStopsAfterAFailedBatch(t *testing.T) {
	faces := map[string]func(*testing.T) *Redis{"miniredis": miniFace}
	if os.Getenv("RLSIM_REDIS_URL") != "" {
		faces["redis"] = realRedis
	}
	for name, open := range faces {
		before := runtime.NumGoroutine()
		face := open(t)
		prefix := testPrefix(t, 9) + name + ":"
		deleted := false
		t.Cleanup(func() { // when the test fails before it deletes them
			if !deleted {
				deleteUnder(t, face, prefix)
			}
		})
		lim, err := NewLimiter(face, "fixed-window", algorithms.Policy{Limit: 10, Window: time.Second}, prefix)
		if err != nil {
			t.Fatal(err)
		}
		now := int64(1.7e18)
		batch := func(bad bool) []Call {
			var calls []Call
			for i := range 64 {
				c := lim.Call(fmt.Sprint("u", i%8), Now(now), 1)
				if bad && i == 40 {
					c.Keys = []string{prefix + "list"} // a key of the wrong type
				}
				calls = append(calls, c)
			}
			return calls
		}
		if err := face.Client().RPush(context.Background(), prefix+"list", "x").Err(); err != nil {
			t.Fatal(err)
		}
		s := NewStream(face)
		first, failing, after := s.Send(batch(false)), s.Send(batch(true)), s.Send(batch(false))
		if _, err := first.Wait(); err != nil {
			t.Fatalf("%s: the batch before the failing one: %v", name, err)
		}
		if _, err := failing.Wait(); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("%s: the failing batch: want WRONGTYPE, got %v", name, err)
		}
		after.Wait()
		if _, err := s.Send(batch(false)).Wait(); !errors.Is(err, errStopped) {
			t.Fatalf("%s: a batch sent after the failure: want %v, got %v", name, errStopped, err)
		}
		deleteUnder(t, face, prefix)
		deleted = true
		face.Close() // an embedded server's goroutines, one per connection, end with it
		waitGoroutines(t, before)
	}
}

// waitGoroutines fails the test unless the goroutines fall back to n within a second.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	for range 100 {
		if runtime.NumGoroutine() <= n {
			return
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d goroutines left, %d before", runtime.NumGoroutine(), n)
}
