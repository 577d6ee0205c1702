package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
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

// deleteUnder removes what a test wrote under prefix on a real server.
func deleteUnder(t *testing.T, r *Redis, prefix string) {
	t.Helper()
	keys, err := r.Keys(prefix)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	if err := r.Delete(names...); err != nil {
		t.Fatal(err)
	}
}

// The non-atomic pattern's two key kinds, decided beside the scripts in random traces.
const (
	incrTTLWindow   = "incr-expire/ttl-window"
	incrTimestamped = "incr-expire/timestamped"
)

// traceAlgorithms are what a random trace mixes: every script.
var traceAlgorithms = append(append([]string{}, Algorithms()...), "lease", incrTTLWindow, incrTimestamped)

// traceKong is Kong's shared counters in a random trace (see withKong), configured from
// its policy by kongSpec.
const traceKong = "kong"

// withKong is trace with every seventh step, from the fourth, decided by Kong's counters.
func withKong(trace []step) []step {
	out := slices.Clone(trace)
	for i := 3; i < len(out); i += 7 {
		out[i].algorithm = traceKong
	}
	return out
}

// kongSpec is the Kong spec a trace under p runs: p's limit a second and three times it a
// minute, on Redis.
func kongSpec(p algorithms.Policy) string {
	return fmt.Sprintf("kong:second=%d minute=%d policy=redis", p.Limit, 3*p.Limit)
}

type step struct {
	algorithm string
	key       string
	at        At
	cost      int64
	crash     bool // the non-atomic pattern: the process dies between its two commands
}

// randomTrace mixes bursts at one instant, steps within a window, landings exactly on
// window boundaries, idle jumps of several windows. The store's clock only moves forward;
// each request comes from one of five nodes whose clocks are off by up to ±skew, and one
// in four reaches the store late, by up to skew more, so the times a key sees on node
// clocks go back and forth by up to 3·skew (see keepFor).
func randomTrace(rng *rand.Rand, p algorithms.Policy, n int, skew time.Duration) []step {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano() + rng.Int64N(int64(p.Window))
	w := int64(p.Window)
	offsets := make([]int64, 5)
	for i := range offsets {
		if skew > 0 {
			offsets[i] = rng.Int64N(2*int64(skew)+1) - int64(skew)
		}
	}
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
		default:
			now += rng.Int64N(w / 50)
		}
		node := now + offsets[rng.IntN(len(offsets))]
		if skew > 0 && rng.IntN(4) == 0 {
			node -= rng.Int64N(int64(skew) + 1)
		}
		out = append(out, step{
			algorithm: traceAlgorithms[rng.IntN(len(traceAlgorithms))],
			key:       fmt.Sprintf("user_%d", rng.IntN(3)),
			at:        At{Store: now, Node: node},
			cost:      1 + rng.Int64N(3),
			crash:     rng.IntN(4) == 0,
		})
	}
	return out
}

// keepFor is the keep a trace of randomTrace with skew needs: the widest gap between the
// node clocks that read a key, 3·skew.
func keepFor(skew time.Duration) time.Duration { return 3 * skew }

func randomPolicy(rng *rand.Rand) algorithms.Policy {
	p := algorithms.Policy{
		Limit:  1 + rng.Int64N(12),
		Window: []time.Duration{200 * time.Millisecond, time.Second, 1500 * time.Millisecond, 10 * time.Second, time.Minute}[rng.IntN(5)],
	}
	if rng.IntN(2) == 0 {
		p.Burst = 1 + rng.Int64N(15)
	}
	return p
}

// randomSkew is none, a little, a third of the window or two windows.
func randomSkew(rng *rand.Rand, p algorithms.Policy) time.Duration {
	return []time.Duration{0, p.Window / 20, p.Window / 3, 2 * p.Window}[rng.IntN(4)]
}

// faceRun holds one face's limiters for a trace: the scripts' and the non-atomic pair.
type faceRun struct {
	st     Store
	p      algorithms.Policy
	prefix string
	clock  Clock
	keep   time.Duration
	lims   map[string]*Limiter
	nx     map[string]*NonAtomic
	kong   *Counters
}

func newFaceRun(st Store, p algorithms.Policy, prefix string, clock Clock, keep time.Duration) *faceRun {
	return &faceRun{st: st, p: p, prefix: prefix, clock: clock, keep: keep, lims: map[string]*Limiter{}, nx: map[string]*NonAtomic{}}
}

// limiter returns the cached limiter of algorithm, making it on first use.
func (f *faceRun) limiter(t *testing.T, algorithm string) *Limiter {
	t.Helper()
	if l := f.lims[algorithm]; l != nil {
		return l
	}
	l, err := NewLimiter(f.st, algorithm, f.p, f.prefix)
	if err != nil {
		t.Fatal(err)
	}
	l.SetClock(f.clock)
	l.SetKeep(f.keep)
	f.lims[algorithm] = l
	return l
}

func (f *faceRun) nonAtomic(t *testing.T, algorithm string) *NonAtomic {
	t.Helper()
	if n := f.nx[algorithm]; n != nil {
		return n
	}
	n, err := NewNonAtomic(f.st, f.p, f.prefix+algorithm+":", algorithm == incrTTLWindow)
	if err != nil {
		t.Fatal(err)
	}
	n.SetClock(f.clock)
	n.SetKeep(f.keep)
	f.nx[algorithm] = n
	return n
}

// decide runs one step and describes its decision.
func (f *faceRun) decide(t *testing.T, i int, s step) string {
	t.Helper()
	head := fmt.Sprintf("%d %s %s store=%d node=%d cost=%d", i, s.algorithm, s.key, s.at.Store, s.at.Node, s.cost)
	if strings.HasPrefix(s.algorithm, "incr-expire") {
		r, err := f.nonAtomic(t, s.algorithm).Allow(s.key, s.at, s.cost, s.crash)
		if err != nil {
			t.Fatalf("%s step %d: %v", f.st.Name(), i, err)
		}
		return fmt.Sprintf("%s -> %v %d trips=%d crashed=%v", head, r.Allowed, r.Remaining, r.RoundTrips, r.Crashed)
	}
	if s.algorithm == traceKong {
		if f.kong == nil {
			var err error
			if f.kong, err = NewCounters(f.st, kongSpec(f.p), f.prefix); err != nil {
				t.Fatal(err)
			}
			f.kong.SetClock(f.clock)
			f.kong.SetKeep(f.keep)
		}
		r, trips, err := f.kong.Allow(s.key, s.at, s.cost)
		if err != nil {
			t.Fatalf("%s step %d: %v", f.st.Name(), i, err)
		}
		return fmt.Sprintf("%s -> %v %d retry=%s reset=%s trips=%d", head, r.Allowed, r.Remaining, r.RetryAfter, r.Reset, trips)
	}
	r, err := f.limiter(t, s.algorithm).Allow(s.key, s.at, s.cost)
	if err != nil {
		t.Fatalf("%s step %d: %v", f.st.Name(), i, err)
	}
	return fmt.Sprintf("%s -> %v %d retry=%s reset=%s", head, r.Allowed, r.Remaining, r.RetryAfter, r.Reset)
}

// runTrace replays trace on st by clock and returns one line per decision.
func runTrace(t *testing.T, st Store, p algorithms.Policy, prefix string, trace []step, clock Clock, keep time.Duration) []string {
	t.Helper()
	f := newFaceRun(st, p, prefix, clock, keep)
	out := make([]string, len(trace))
	for i, s := range trace {
		out[i] = f.decide(t, i, s)
	}
	return out
}

func compareDecisions(t *testing.T, what string, want, got []string) {
	t.Helper()
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: first difference at decision %d:\n model: %s\n other: %s", what, i, want[i], got[i])
		}
	}
}

// compareKeys requires the same live keys, types, values, sizes, virtual expiries and
// TTLs (within 1ms, miniredis keeps them in its own units).
func compareKeys(t *testing.T, what string, want, got []KeyInfo) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: model holds %d keys, the other face %d\n model: %v\n other: %v", what, len(want), len(got), want, got)
	}
	for i := range want {
		w, g := want[i], got[i]
		ttlOK := (w.TTL == NoTTL) == (g.TTL == NoTTL) && (w.TTL == NoTTL || (w.TTL-g.TTL).Abs() <= time.Millisecond)
		if w.Name != g.Name || w.Type != g.Type || w.Value != g.Value || w.Len != g.Len || w.Counter != g.Counter || w.Expiry != g.Expiry || !ttlOK {
			t.Fatalf("%s: key %d differs:\n model: %+v\n other: %+v", what, i, w, g)
		}
	}
}

// goesBack reports whether some key sees a node time earlier than one it saw before.
func goesBack(trace []step) bool {
	latest := map[string]int64{}
	for _, s := range trace {
		k := s.algorithm + s.key
		if l, ok := latest[k]; ok && s.at.Node < l {
			return true
		}
		latest[k] = max(latest[k], s.at.Node)
	}
	return false
}

// conformanceCase is one random trace and what it runs with.
type conformanceCase struct {
	p     algorithms.Policy
	skew  time.Duration
	trace []step
}

func newConformanceCase(seed uint64, n int) conformanceCase {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := randomPolicy(rng)
	skew := randomSkew(rng, p)
	return conformanceCase{p: p, skew: skew, trace: withKong(randomTrace(rng, p, n, skew))}
}

func (c conformanceCase) String() string {
	return fmt.Sprintf("policy %s, skew %s", c.p, c.skew)
}

// TestScriptsMatchModel replays random skewed, reordered traces through every script on
// the model and on miniredis — reading the store's clock with TIME, and again sent it as
// a real server is — by each clock, and requires identical decisions, then identical
// keyspaces (virtual expiries and TTLs included) at the end and once every key would have
// expired.
func TestScriptsMatchModel(t *testing.T) {
	backwards, crashed := false, false
	for seed := uint64(1); seed <= 8; seed++ {
		c := newConformanceCase(seed, 250)
		backwards = backwards || goesBack(c.trace)
		for _, clock := range []Clock{NodeClock, StoreClock} {
			t.Run(fmt.Sprintf("%d/%s", seed, clock), func(t *testing.T) {
				keep := keepFor(c.skew)
				model := NewModel()
				want := runTrace(t, model, c.p, "rl:", c.trace, clock, keep)
				all := strings.Join(want, "\n")
				if !strings.Contains(all, "-> true") || !strings.Contains(all, "-> false") {
					t.Fatalf("%s: the trace should both admit and refuse", c)
				}
				mini := miniFace(t)
				compareDecisions(t, fmt.Sprintf("%s: miniredis", c), want, runTrace(t, mini, c.p, "rl:", c.trace, clock, keep))
				if clock == StoreClock { // by node clocks only the non-atomic pair reads the store's
					explicit := miniFace(t)
					explicit.explicitClock = true
					compareDecisions(t, fmt.Sprintf("%s: miniredis sent the store's time", c), want, runTrace(t, explicit, c.p, "rl:", c.trace, clock, keep))
				}

				// The slowest key to go stale is an empty bucket: burst/limit windows to refill.
				refill := time.Duration(c.p.EffectiveBurst()) * c.p.Window / time.Duration(c.p.Limit)
				// Kong's minute counter lives a minute from its creation (kongSpec).
				for _, later := range []int64{0, int64(max(refill+3*c.p.Window, time.Minute) + keep + time.Second)} {
					end := c.trace[len(c.trace)-1].at.Store + later
					model.SetNow(end)
					mini.SetNow(end)
					mk, _ := model.Keys("rl:")
					rk, err := mini.Keys("rl:")
					if err != nil {
						t.Fatal(err)
					}
					compareKeys(t, "miniredis keys", mk, rk)
					for _, k := range mk {
						if later > 0 && k.TTL != NoTTL {
							t.Fatalf("key outlived its TTL: %+v", k)
						}
						crashed = crashed || k.Counter && k.Expiry == 0
					}
				}
			})
		}
	}
	if !backwards || !crashed {
		t.Fatalf("no trace stepped back in time (%v) or left a crashed counter (%v): the test proves less than it claims", backwards, crashed)
	}
}

// The same traces on a real Redis (RLSIM_REDIS_URL), whose TTLs run on its wall clock:
// windows of 200 ms, steps back in time and the non-atomic pattern's expiry decide
// exactly as on the model, and the end-of-run audit finds the same keys blocked and
// leaked.
func TestScriptsMatchModelOnRealRedis(t *testing.T) {
	var leakedBytes int64
	for seed := uint64(1); seed <= 8; seed++ {
		c := newConformanceCase(seed, 250)
		for _, clock := range []Clock{NodeClock, StoreClock} {
			real := realRedis(t) // a run of its own: the store's clock starts afresh
			keep := keepFor(c.skew)
			prefix := testPrefix(t, seed) + string(clock) + ":"
			model := NewModel()
			want := runTrace(t, model, c.p, prefix, c.trace, clock, keep)
			got := runTrace(t, real, c.p, prefix, c.trace, clock, keep)
			wantAudit, _ := Audit(model, prefix+incrTTLWindow, c.p.Limit, true)
			gotAudit, err := Audit(real, prefix+incrTTLWindow, c.p.Limit, true)
			if err != nil {
				t.Fatal(err)
			}
			if !gotAudit.LeakedMeasured || wantAudit.LeakedMeasured {
				t.Errorf("leaked bytes measured on the real server (%v), modelled on the model (%v)", gotAudit.LeakedMeasured, !wantAudit.LeakedMeasured)
			}
			// The model's leaked bytes are CounterBytes of each name: the real server's
			// MEMORY USAGE of the same keys, to the byte.
			wantAudit.LeakedMeasured = true
			leakedBytes += gotAudit.LeakedBytes
			keys, err := real.Keys(prefix)
			if err != nil {
				t.Fatal(err)
			}
			deleteUnder(t, real, prefix)
			compareDecisions(t, fmt.Sprintf("seed %d %s, clock %s: real Redis", seed, c, clock), want, got)
			if wantAudit != gotAudit {
				t.Errorf("seed %d clock %s: audit %+v on the model, %+v on the real server", seed, clock, wantAudit, gotAudit)
			}
			for _, k := range keys {
				// The atomic scripts set a TTL in the same step as the first write; only a
				// counter whose second command never ran has none.
				if (k.TTL == NoTTL) != (k.Counter && k.Expiry == 0) {
					t.Errorf("real Redis: key %+v: a TTL only and always where an expiry was set", k)
				}
			}
		}
	}
	if leakedBytes == 0 {
		t.Error("no trace leaked a key: the leaked bytes were never compared")
	}
}

// A deployed script reads TIME when ARGV[1] is empty: on a real server it runs and
// decides (by the server's wall clock, which rlsim never relies on: it sends its virtual
// time instead).
func TestScriptsReadTimeOnRealRedis(t *testing.T) {
	real := realRedis(t)
	prefix := testPrefix(t, 0)
	defer deleteUnder(t, real, prefix)
	for _, s := range Scripts() {
		args := []any{"", "5", "1000000", "5", "1", "0"}
		v, err := s.lua.Run(t.Context(), real.client, []string{prefix + s.Name, prefix + s.Name + ":2"}, args...).Int64Slice()
		if err != nil || len(v) == 0 {
			t.Errorf("%s with the server's TIME: %v %v", s.Name, v, err)
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
		at := At{Store: base + i*100*ms, Node: base + i*100*ms}
		if i%2 == 1 {
			at.Node -= 300 * ms
		}
		trace = append(trace, step{algorithm: "sliding-log", key: "u", at: at, cost: 1})
	}
	keep := 300 * time.Millisecond
	want := runTrace(t, NewModel(), p, "rl:", trace, NodeClock, keep)
	compareDecisions(t, "out-of-order sliding log: miniredis", want, runTrace(t, miniFace(t), p, "rl:", trace, NodeClock, keep))
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
		if _, err := lim.Allow("u", Now(now+i*int64(time.Second)), 1); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() > 4096 {
		t.Fatalf("the model holds %d keys after 20000 windows of one client", m.Len())
	}
}

// backwardsCase is a script's timeline where a caller behind the others comes last: it
// must be refused, where crediting the time it steps back over would admit it.
type backwardsCase struct {
	algorithm string
	p         algorithms.Policy
	steps     []backwardsStep
}

type backwardsStep struct {
	store, node time.Duration // after 10:00:00, on each clock
	cost        int64
	allowed     bool
}

// TestBackwardsNeverCredits holds each script to the rule for a now earlier than its key
// has seen: no refill, no window reset, no expiry from a backwards step. Each timeline
// ends with a caller whose clock is behind; the last step of each would pass if the
// script credited the interval it steps back over.
func TestBackwardsNeverCredits(t *testing.T) {
	const s = time.Second
	perMinute := algorithms.Policy{Limit: 10, Window: time.Minute}
	for _, tc := range []backwardsCase{
		// A node 5 s ahead takes a token 17 s after the bucket was drained (2.8 tokens
		// refilled), a node behind takes another at 7 s; the node ahead must not be
		// refilled again for the 10 s the other stepped back over.
		{"token-bucket", perMinute, []backwardsStep{
			{0, 0, 10, true}, {12 * s, 17 * s, 1, true}, {12 * s, 7 * s, 1, true}, {12 * s, 17 * s, 2, false},
		}},
		{"lease", perMinute, []backwardsStep{
			{0, 0, 10, true}, {12 * s, 17 * s, 1, true}, {12 * s, 7 * s, 1, true}, {12 * s, 17 * s, 2, false},
		}},
		// After 10 at once the schedule runs 60 s ahead; a caller behind is judged on it.
		{"gcra", perMinute, []backwardsStep{
			{0, 0, 10, true}, {1 * s, 6 * s, 1, true}, {2 * s, -3 * s, 1, false},
		}},
		// A node ahead is refused at 61 s; a node behind at 58 s must still count the 10
		// logged at 0 s, which the refusal must not have trimmed. Then the node ahead is
		// admitted (trimming them), the node behind takes the rest judged at 61 s, and at
		// 119 s all ten still count: logged at 58 s they would have left the window.
		{"sliding-log", perMinute, []backwardsStep{
			{0, 0, 10, true}, {59 * s, 61 * s, 11, false}, {60 * s, 58 * s, 1, false},
			{61 * s, 61 * s, 1, true}, {61 * s, 58 * s, 9, true}, {119 * s, 119 * s, 1, false},
		}},
		// Window 10:00–10:01 is full; a node 5 s behind is still in it at 10:01:02 on the
		// store's clock, and the counter, which outlives its window by keep, refuses it
		// instead of a fresh window letting it through.
		{"fixed-window", perMinute, []backwardsStep{
			{0, 0, 10, true}, {62 * s, 57 * s, 1, false},
		}},
		// The first window's 10 still weigh 3/60 at 10:01:57 on the clock of a node 5 s
		// behind: 0.5 + 9 + 1 is over 10, so the counter must outlive its window by keep.
		{"sliding-window", perMinute, []backwardsStep{
			{0, 0, 10, true}, {115 * s, 115 * s, 9, true}, {122 * s, 117 * s, 1, false},
		}},
	} {
		t.Run(tc.algorithm, func(t *testing.T) {
			base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
			for _, face := range []Store{NewModel(), miniFace(t)} {
				lim, err := NewLimiter(face, tc.algorithm, tc.p, "rl:")
				if err != nil {
					t.Fatal(err)
				}
				lim.SetKeep(10 * s) // twice the 5 s the clocks are apart
				for i, st := range tc.steps {
					r, err := lim.Allow("u", At{Store: base + int64(st.store), Node: base + int64(st.node)}, st.cost)
					if err != nil {
						t.Fatal(err)
					}
					if r.Allowed != st.allowed {
						t.Fatalf("%s step %d (store +%s, node +%s, cost %d): allowed %v, want %v", face.Name(), i, st.store, st.node, st.cost, r.Allowed, st.allowed)
					}
				}
			}
		})
	}
}

// Without keep covering the gap between clocks, the fixed window's counter is collected
// while a node behind is still in its window, and that node gets a fresh window: why the
// fleet sets keep to twice its skew.
func TestKeepShorterThanSkewResetsAWindow(t *testing.T) {
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	lim, _ := NewLimiter(NewModel(), "fixed-window", algorithms.Policy{Limit: 10, Window: time.Minute}, "rl:")
	lim.SetKeep(time.Second)
	lim.Allow("u", Now(base), 10)
	r, _ := lim.Allow("u", At{Store: base + int64(62*time.Second), Node: base + int64(57*time.Second)}, 1)
	if !r.Allowed {
		t.Fatal("a counter collected 1 s after its window should have let the node behind start afresh")
	}
}

// Every script is listed, and each one's twin takes the same arguments.
func TestScriptsListed(t *testing.T) {
	var names []string
	for _, s := range Scripts() {
		names = append(names, s.Name)
		if !strings.Contains(s.Source, "\n-- Time") {
			t.Errorf("%s: no rule for time stated at its top", s.Name)
		}
	}
	want := []string{"counter", "fixed_window", "gcra", "lease", "nonatomic_expire", "nonatomic_incr", "sliding_log", "sliding_window", "token_bucket"}
	if !slices.Equal(names, want) {
		t.Fatalf("scripts %v, want %v", names, want)
	}
}
