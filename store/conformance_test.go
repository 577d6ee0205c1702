package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// realRedis connects to the server named by RLSIM_REDIS_URL, or skips the test.
func realRedis(t *testing.T) *Redis {
	t.Helper()
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set: no real Redis to run against")
	}
	r, err := NewRedis(url)
	if err != nil {
		t.Fatalf("RLSIM_REDIS_URL=%s: %v", url, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func miniFace(t *testing.T) *Redis {
	t.Helper()
	r, err := NewMiniredis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// testPrefix is unique per test and run, so runs on a shared real server never meet.
func testPrefix(t *testing.T, seed uint64) string {
	return fmt.Sprintf("rlsim-test:%s:%d:%d:", t.Name(), seed, time.Now().UnixNano())
}

type step struct {
	algorithm string
	key       string
	now       int64 // ns
	cost      int64
}

// randomTrace mixes bursts at one instant, steps within a window, landings exactly on
// window boundaries, idle jumps of several windows and steps back in time (skewed nodes).
func randomTrace(rng *rand.Rand, p algorithms.Policy, n int, backwards bool) []step {
	algs := append(append([]string{}, Algorithms...), "lease")
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano() + rng.Int64N(int64(p.Window))
	w := int64(p.Window)
	var out []step
	for range n {
		switch r := rng.IntN(80); {
		case r < 24: // same instant
		case r < 26:
			now = (now/w + 1) * w // exactly the next boundary
		case r < 27:
			now += w * (1 + rng.Int64N(3))
		case r < 37:
			now += rng.Int64N(1000) // sub-µs and µs steps
		case r < 40 && backwards:
			now -= rng.Int64N(w / 20) // a node whose clock runs behind
		default:
			now += rng.Int64N(w / 50)
		}
		out = append(out, step{
			algorithm: algs[rng.IntN(len(algs))],
			key:       fmt.Sprintf("user_%d", rng.IntN(3)),
			now:       now,
			cost:      1 + rng.Int64N(3),
		})
	}
	return out
}

func randomPolicy(rng *rand.Rand) algorithms.Policy {
	p := algorithms.Policy{
		Limit:  1 + rng.Int64N(12),
		Window: []time.Duration{time.Second, 1500 * time.Millisecond, 10 * time.Second, time.Minute}[rng.IntN(4)],
	}
	if rng.IntN(2) == 0 {
		p.Burst = 1 + rng.Int64N(15)
	}
	return p
}

// limiterFor returns the cached limiter of algorithm on st, making it on first use.
func limiterFor(t *testing.T, lims map[string]*Limiter, st Store, algorithm string, p algorithms.Policy, prefix string) *Limiter {
	t.Helper()
	if l := lims[algorithm]; l != nil {
		return l
	}
	l, err := NewLimiter(st, algorithm, p, prefix)
	if err != nil {
		t.Fatal(err)
	}
	lims[algorithm] = l
	return l
}

// runTrace replays trace on st and returns one line per decision.
func runTrace(t *testing.T, st Store, p algorithms.Policy, prefix string, trace []step) []string {
	t.Helper()
	lims := map[string]*Limiter{}
	var out []string
	for i, s := range trace {
		l := limiterFor(t, lims, st, s.algorithm, p, prefix)
		r, err := l.Allow(s.key, s.now, s.cost)
		if err != nil {
			t.Fatalf("%s step %d: %v", st.Name(), i, err)
		}
		out = append(out, fmt.Sprintf("%d %s %s t=%d cost=%d -> %v %d", i, s.algorithm, s.key, s.now, s.cost, r.Allowed, r.Remaining))
	}
	return out
}

func compareDecisions(t *testing.T, what string, want, got []string) {
	t.Helper()
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: first difference at decision %d:\n model: %s\n %s", what, i, want[i], got[i])
		}
	}
}

// compareKeys requires the same live keys, types, values, sizes and TTLs (within 1ms,
// miniredis keeps them in its own units).
func compareKeys(t *testing.T, what string, want, got []KeyInfo) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: model holds %d keys, the other face %d\n model: %v\n other: %v", what, len(want), len(got), want, got)
	}
	for i := range want {
		w, g := want[i], got[i]
		ttlOK := (w.TTL == NoTTL) == (g.TTL == NoTTL) && (w.TTL == NoTTL || (w.TTL-g.TTL).Abs() <= time.Millisecond)
		if w.Name != g.Name || w.Type != g.Type || w.Value != g.Value || w.Len != g.Len || !ttlOK {
			t.Fatalf("%s: key %d differs:\n model: %+v\n other: %+v", what, i, w, g)
		}
	}
}

// TestScriptsMatchModel replays random traces through the model and the Lua scripts on
// miniredis (and on a real Redis when RLSIM_REDIS_URL is set) and requires identical
// decisions; on miniredis, whose clock follows the virtual time, also identical keys.
func TestScriptsMatchModel(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			p := randomPolicy(rng)
			trace := randomTrace(rng, p, 250, true)
			want := runTrace(t, NewModel(), p, "rl:", trace)
			if !strings.Contains(strings.Join(want, "\n"), "-> true") || !strings.Contains(strings.Join(want, "\n"), "-> false") {
				t.Fatalf("policy %s: the trace should both admit and refuse", p)
			}

			mini := miniFace(t)
			compareDecisions(t, fmt.Sprintf("policy %s: miniredis", p), want, runTrace(t, mini, p, "rl:", trace))
			// Compare the keyspaces at the end and once every key would have expired.
			model := NewModel()
			runTrace(t, model, p, "rl:", trace)
			for _, later := range []int64{0, int64(3 * p.Window)} {
				end := trace[len(trace)-1].now + later
				model.SetNow(end)
				mini.SetNow(end)
				mk, _ := model.Keys("rl:")
				rk, err := mini.Keys("rl:")
				if err != nil {
					t.Fatal(err)
				}
				compareKeys(t, "miniredis keys", mk, rk)
				if later > 0 && len(mk) != 0 {
					t.Fatalf("keys outlived every TTL: %v", mk)
				}
			}
		})
	}
}

func TestScriptsMatchModelOnRealRedis(t *testing.T) {
	real := realRedis(t)
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := randomPolicy(rng)
		// A real server expires keys on its wall clock. The scripts decide alike whether a
		// key expired or went stale only if it does not expire before it is stale in
		// virtual time, so the test's windows outlast its wall-clock run.
		p.Window = max(p.Window, 10*time.Second)
		// Nor may time step back: a stale key read with an earlier time is not a fresh
		// one, so expiry would matter again (see the package comment on skew).
		trace := randomTrace(rng, p, 250, false)
		prefix := testPrefix(t, seed)
		want := runTrace(t, NewModel(), p, prefix, trace)
		got := runTrace(t, real, p, prefix, trace)
		keys, err := real.Keys(prefix)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range keys {
			names = append(names, k.Name)
			// The atomic scripts set the TTL in the same step as the first write.
			if k.TTL == NoTTL {
				t.Errorf("real Redis: key %s written by a script has no TTL", k.Name)
			}
		}
		if err := real.Delete(names...); err != nil {
			t.Fatal(err)
		}
		compareDecisions(t, fmt.Sprintf("seed %d policy %s: real Redis", seed, p), want, got)
	}
}

// TestNonAtomicMatchesModel runs INCR-then-EXPIRE with crashes on both faces whose clock
// follows the virtual time: the keys left without a TTL must be the same.
func TestNonAtomicMatchesModel(t *testing.T) {
	for _, ttlWindow := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(3, 3))
		p := algorithms.Policy{Limit: 5, Window: time.Second}
		trace := randomTrace(rng, p, 300, true)
		crashes := make([]bool, len(trace))
		for i := range crashes {
			crashes[i] = rng.IntN(4) == 0
		}
		run := func(st Store) ([]string, []KeyInfo) {
			n, err := NewNonAtomic(st, p, "rl:", ttlWindow)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for i, s := range trace {
				r, err := n.Allow(s.key, s.now, s.cost, crashes[i])
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprintf("%d %v %d %d %v", i, r.Allowed, r.Remaining, r.RoundTrips, r.Crashed))
			}
			keys, err := st.Keys("rl:")
			if err != nil {
				t.Fatal(err)
			}
			return out, keys
		}
		wantDecisions, wantKeys := run(NewModel())
		gotDecisions, gotKeys := run(miniFace(t))
		compareDecisions(t, fmt.Sprintf("non-atomic ttl-window=%v", ttlWindow), wantDecisions, gotDecisions)
		compareKeys(t, "non-atomic keys", wantKeys, gotKeys)
		leaked := 0
		for _, k := range wantKeys {
			if k.TTL == NoTTL {
				leaked++
			}
		}
		if leaked == 0 {
			t.Errorf("ttl-window=%v: crashes left no key without a TTL; the test proves nothing", ttlWindow)
		}
	}
}

// Skewed nodes write the sliding log out of time order; the sorted set must trim by score
// all the same.
func TestSlidingLogOutOfOrderWrites(t *testing.T) {
	p := algorithms.Policy{Limit: 4, Window: time.Second}
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	ms := int64(time.Millisecond)
	var trace []step
	// Two nodes, one 300ms behind the other, alternating.
	for i := range int64(40) {
		at := base + i*100*ms
		if i%2 == 1 {
			at -= 300 * ms
		}
		trace = append(trace, step{algorithm: "sliding-log", key: "u", now: at, cost: 1})
	}
	want := runTrace(t, NewModel(), p, "rl:", trace)
	compareDecisions(t, "out-of-order sliding log: miniredis", want, runTrace(t, miniFace(t), p, "rl:", trace))
}

// Keys of past windows that nobody reads again are dropped once expired, so a long run's
// model does not grow with the number of windows.
func TestModelSweepsExpiredKeys(t *testing.T) {
	m := NewModel()
	p := algorithms.Policy{Limit: 10, Window: time.Second}
	lim, err := NewLimiter(m, "fixed-window", p, "rl:")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	for i := range int64(20000) {
		if _, err := lim.Allow("u", now+i*int64(time.Second), 1); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() > 4096 {
		t.Fatalf("the model holds %d keys after 20000 windows of one client", m.Len())
	}
}
