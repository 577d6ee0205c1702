package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlsim/rlsim/algorithms"
)

// scriptsOnly leaves out a trace's steps of the non-atomic pattern, which never batches.
func scriptsOnly(trace []step) []step {
	var out []step
	for _, s := range trace {
		if !strings.HasPrefix(s.algorithm, "incr-expire") {
			out = append(out, s)
		}
	}
	return out
}

// runBatched replays trace on st by clock in batches of random sizes (1 to maxBatch)
// through EvalBatch and returns one line per decision, as runTrace does. between, when
// not nil, runs before every batch but the first, and returns what to send each call's
// script as (nil: as it is).
func runBatched(t *testing.T, st Store, p algorithms.Policy, prefix string, trace []step, clock Clock, keep time.Duration, rng *rand.Rand, maxBatch int, between func() func(*Script) *Script) []string {
	t.Helper()
	f := newFaceRun(st, p, prefix, clock, keep)
	var out []string
	var sendAs func(*Script) *Script
	repeated := false
	for start := 0; start < len(trace); {
		n := min(1+rng.IntN(maxBatch), len(trace)-start)
		batch := trace[start : start+n]
		if start > 0 && between != nil {
			sendAs = between()
		}
		calls := make([]Call, len(batch))
		seen := map[string]bool{}
		for i, s := range batch {
			calls[i] = f.limiter(t, s.algorithm).Call(s.key, s.at, s.cost)
			if sendAs != nil {
				calls[i].Script = sendAs(calls[i].Script)
			}
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
			out = append(out, fmt.Sprintf("%d %s %s store=%d node=%d cost=%d -> %v %d retry=%s reset=%s", start+i, s.algorithm, s.key, s.at.Store, s.at.Node, s.cost, r.Allowed, r.Remaining, r.RetryAfter, r.Reset))
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
			skew := randomSkew(rng, p)
			trace := scriptsOnly(randomTrace(rng, p, 300, skew))
			clock := []Clock{NodeClock, StoreClock}[seed%2]
			keep := keepFor(skew)
			model := NewModel()
			want := runTrace(t, model, p, "rl:", trace, clock, keep)

			mini := miniFace(t)
			flushes := 0
			batches := 0
			flush := func() func(*Script) *Script {
				if batches++; batches%3 == 0 {
					flushes++
					if err := mini.Client().ScriptFlush(context.Background()).Err(); err != nil {
						t.Fatal(err)
					}
				}
				return nil
			}
			got := runBatched(t, mini, p, "rl:", trace, clock, keep, rng, 64, flush)
			compareDecisions(t, fmt.Sprintf("policy %s, skew %s, clock %s: pipelined miniredis", p, skew, clock), want, got)
			if flushes == 0 {
				t.Fatal("no script flush happened; the NOSCRIPT path went untested")
			}
			if mini.Pipelines() >= int64(len(trace)) || mini.ScriptCalls() != int64(len(trace)) {
				t.Fatalf("%d calls in %d pipelines: the calls were not batched", mini.ScriptCalls(), mini.Pipelines())
			}
			end := trace[len(trace)-1].at.Store
			model.SetNow(end)
			mini.SetNow(end)
			mk, _ := model.Keys("rl:")
			rk, err := mini.Keys("rl:")
			if err != nil {
				t.Fatal(err)
			}
			compareKeys(t, "pipelined miniredis keys", mk, rk)

			// The model has no pipeline: EvalBatch calls it one by one, alike.
			compareDecisions(t, "batched model", want, runBatched(t, NewModel(), p, "rl:", trace, clock, keep, rng, 64, nil))
		})
	}
}

// unseenNonce keeps the generations of unseen apart from those of other test processes.
var unseenNonce = time.Now().UnixNano()

// unseen is s with a comment that makes its SHA one no server has seen.
func unseen(s *Script, n int) *Script {
	c := *s
	c.Source = fmt.Sprintf("%s-- generation %d of run %d\n", s.Source, n, unseenNonce)
	c.lua = redis.NewScript(c.Source)
	return &c
}

func TestEvalBatchOnRealRedis(t *testing.T) {
	reloads := int64(0)
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		p := randomPolicy(rng)
		skew := randomSkew(rng, p)
		trace := scriptsOnly(randomTrace(rng, p, 300, skew))
		clock := []Clock{NodeClock, StoreClock}[seed%2]
		keep := keepFor(skew)
		want := runTrace(t, NewModel(), p, "rl:", trace, clock, keep)
		seqPrefix, pipePrefix := testPrefix(t, seed)+"seq:", testPrefix(t, seed)+"pipe:"
		// Each run on a connection of its own: the store's clock starts afresh.
		seq := runTrace(t, realRedis(t), p, seqPrefix, trace, clock, keep)
		real := realRedis(t)
		// A server that has lost its scripts answers NOSCRIPT. Flushing a server other
		// tests use at the same time would hit their pipelines too (and a script one of
		// them loads again in between would leave a pipeline's calls out of order), so
		// every few batches the calls go out as scripts of a new generation — the same
		// Lua with a comment of their own, a SHA the server has never seen — which the
		// face believes loaded: the NOSCRIPT path without touching anyone else.
		batches := 0
		var gen map[*Script]*Script
		flush := func() func(*Script) *Script {
			if batches++; batches%4 == 0 {
				// A whole generation at once: a pipeline mixing scripts the server knows
				// with ones it does not would be a server losing scripts mid-pipeline.
				gen = map[*Script]*Script{}
				if real.loaded == nil {
					real.loaded = map[*Script]bool{}
				}
				n := int(streamGenerations.Add(1)) // new SHAs however often the test runs
				for _, s := range Scripts() {
					gen[s] = unseen(s, n)
					real.loaded[gen[s]] = true
				}
			}
			if gen == nil {
				return nil
			}
			return func(s *Script) *Script { return gen[s] }
		}
		got := runBatched(t, real, p, pipePrefix, trace, clock, keep, rng, 64, flush)
		deleteUnder(t, real, seqPrefix)
		deleteUnder(t, real, pipePrefix)
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: sequential real Redis", seed, p), want, seq)
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: pipelined real Redis", seed, p), want, got)
		reloads += real.reloads.Load()
	}
	if reloads == 0 {
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
	if _, err := EvalBatch(mini, []Call{fw.Call("a", Now(now), 1), gc.Call("a", Now(now), 1)}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mini.Client().ScriptFlush(ctx)
	mini.Client().ScriptLoad(ctx, GCRAScript.Source)
	_, err := EvalBatch(mini, []Call{fw.Call("a", Now(now), 1), gc.Call("a", Now(now), 1)})
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
			alg := Algorithms()[(round+i)%len(Algorithms())]
			ml, _ := NewLimiter(model, alg, p, "rl:")
			rl, _ := NewLimiter(mini, alg, p, "rl:")
			key := fmt.Sprint("u", i%3)
			mc = append(mc, ml.Call(key, Now(now), int64(1+i%2)))
			rc = append(rc, rl.Call(key, Now(now), int64(1+i%2)))
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
