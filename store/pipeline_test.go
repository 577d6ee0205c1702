package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/algorithms"
)

// runBatched replays trace on st in batches of random sizes (1 to maxBatch) through
// EvalBatch and returns one line per decision, as runTrace does. between, when not nil,
// runs before every batch but the first.
func runBatched(t *testing.T, st Store, p algorithms.Policy, prefix string, trace []step, rng *rand.Rand, maxBatch int, between func()) []string {
	t.Helper()
	lims := map[string]*Limiter{}
	var out []string
	repeated := false
	for start := 0; start < len(trace); {
		n := min(1+rng.IntN(maxBatch), len(trace)-start)
		batch := trace[start : start+n]
		if start > 0 && between != nil {
			between()
		}
		calls := make([]Call, len(batch))
		seen := map[string]bool{}
		for i, s := range batch {
			l := limiterFor(t, lims, st, s.algorithm, p, prefix)
			calls[i] = l.Call(s.key, s.now, s.cost)
			k := strings.Join(calls[i].Keys, ",")
			repeated = repeated || seen[k]
			seen[k] = true
		}
		replies, err := EvalBatch(st, calls)
		if err != nil {
			t.Fatalf("%s: batch at step %d: %v", st.Name(), start, err)
		}
		for i, s := range batch {
			r, err := ReplyOf(calls[i].Script, replies[i])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d %s %s t=%d cost=%d -> %v %d", start+i, s.algorithm, s.key, s.now, s.cost, r.Allowed, r.Remaining))
		}
		start += n
	}
	if maxBatch > 4 && !repeated {
		t.Fatal("no batch touched the same key twice; the test proves less than it claims")
	}
	return out
}

// TestEvalBatchMatchesSequential decides random traces in pipelines of random sizes on
// miniredis and requires the decisions of calling the scripts one by one, the model's,
// and at the end the model's keyspace (TTLs included: the clock command moves miniredis's
// clock between the calls of a pipeline). Script cache flushes between batches must be
// healed before any call runs.
func TestEvalBatchMatchesSequential(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			p := randomPolicy(rng)
			trace := randomTrace(rng, p, 300, true)
			model := NewModel()
			want := runTrace(t, model, p, "rl:", trace)

			mini := miniFace(t)
			flushes := 0
			batches := 0
			flush := func() {
				if batches++; batches%3 == 0 {
					flushes++
					if err := mini.Client().ScriptFlush(context.Background()).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			got := runBatched(t, mini, p, "rl:", trace, rng, 64, flush)
			compareDecisions(t, fmt.Sprintf("policy %s: pipelined miniredis", p), want, got)
			if flushes == 0 {
				t.Fatal("no script flush happened; the NOSCRIPT path went untested")
			}
			if mini.Pipelines() >= int64(len(trace)) || mini.ScriptCalls() != int64(len(trace)) {
				t.Fatalf("%d calls in %d pipelines: the calls were not batched", mini.ScriptCalls(), mini.Pipelines())
			}
			end := trace[len(trace)-1].now
			model.SetNow(end)
			mini.SetNow(end)
			mk, _ := model.Keys("rl:")
			rk, err := mini.Keys("rl:")
			if err != nil {
				t.Fatal(err)
			}
			compareKeys(t, "pipelined miniredis keys", mk, rk)

			// The model has no pipeline: EvalBatch calls it one by one, alike.
			compareDecisions(t, "batched model", want, runBatched(t, NewModel(), p, "rl:", trace, rng, 64, nil))
		})
	}
}

func TestEvalBatchOnRealRedis(t *testing.T) {
	real := realRedis(t)
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		p := randomPolicy(rng)
		p.Window = max(p.Window, 10e9) // see TestScriptsMatchModelOnRealRedis
		trace := randomTrace(rng, p, 300, false)
		want := runTrace(t, NewModel(), p, "rl:", trace)
		seqPrefix, pipePrefix := testPrefix(t, seed)+"seq:", testPrefix(t, seed)+"pipe:"
		seq := runTrace(t, real, p, seqPrefix, trace)
		// Flushing the script cache of a shared server is harmless to well-behaved
		// clients (they load again on NOSCRIPT) and drives the retry path here.
		batches := 0
		flush := func() {
			if batches++; batches%4 == 0 {
				real.Client().ScriptFlush(context.Background())
			}
		}
		got := runBatched(t, real, p, pipePrefix, trace, rng, 64, flush)
		for _, prefix := range []string{seqPrefix, pipePrefix} {
			keys, err := real.Keys(prefix)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, k := range keys {
				names = append(names, k.Name)
			}
			if err := real.Delete(names...); err != nil {
				t.Fatal(err)
			}
		}
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: sequential real Redis", seed, p), want, seq)
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: pipelined real Redis", seed, p), want, got)
	}
	if real.reloads.Load() == 0 {
		t.Fatal("no pipeline met NOSCRIPT after a flush; the retry path went untested")
	}
}

// A server that loses one script while another is loaded anew runs later calls of a
// pipeline before a failed one: EvalBatch must say so rather than return decisions out of
// order.
func TestEvalBatchRefusesOutOfOrder(t *testing.T) {
	mini := miniFace(t)
	mini.loadEvery = false // load on first use only, as on a real server
	p := algorithms.Policy{Limit: 5, Window: 1e9}
	fw, _ := NewLimiter(mini, "fixed-window", p, "rl:")
	gc, _ := NewLimiter(mini, "gcra", p, "rl:")
	now := int64(1.7e18)
	if _, err := EvalBatch(mini, []Call{fw.Call("a", now, 1), gc.Call("a", now, 1)}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mini.Client().ScriptFlush(ctx)
	mini.Client().ScriptLoad(ctx, GCRAScript.Source)
	_, err := EvalBatch(mini, []Call{fw.Call("a", now, 1), gc.Call("a", now, 1)})
	if err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("want an out-of-order error, got %v", err)
	}
}

// The clock command checks its argument.
func TestClockCommandRejectsBadArgs(t *testing.T) {
	mini := miniFace(t)
	ctx := context.Background()
	if err := mini.Client().Do(ctx, clockCommand, "soon").Err(); err == nil {
		t.Fatal("want an error for a non-integer time")
	}
	if err := mini.Client().Do(ctx, clockCommand).Err(); err == nil {
		t.Fatal("want an error without a time")
	}
}

// After a flush, a pipeline whose calls all fail with NOSCRIPT is sent again once the
// scripts are loaded, from the first failed call on: same decisions as the model.
func TestEvalBatchReloadsAfterNoScript(t *testing.T) {
	mini := miniFace(t)
	mini.loadEvery = false // load on first use only, as on a real server
	model := NewModel()
	p := algorithms.Policy{Limit: 7, Window: 1e9, Burst: 9}
	now := int64(1.7e18)
	var want, got []string
	ctx := context.Background()
	for round := range 6 {
		var mc, rc []Call
		for i := range 20 {
			alg := Algorithms[(round+i)%len(Algorithms)]
			ml, _ := NewLimiter(model, alg, p, "rl:")
			rl, _ := NewLimiter(mini, alg, p, "rl:")
			key := fmt.Sprint("u", i%3)
			mc = append(mc, ml.Call(key, now, int64(1+i%2)))
			rc = append(rc, rl.Call(key, now, int64(1+i%2)))
		}
		mr, err := EvalBatch(model, mc)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := EvalBatch(mini, rc)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprint(mr))
		got = append(got, fmt.Sprint(rr))
		mini.Client().ScriptFlush(ctx)
		now += 3e8
	}
	compareDecisions(t, "reloaded after NOSCRIPT", want, got)
	if mini.reloads.Load() < 5 {
		t.Fatalf("%d reloads after 5 flushes", mini.reloads.Load())
	}
}
