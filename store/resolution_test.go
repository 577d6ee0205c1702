package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// faces is every face a test can decide on here: the model, miniredis with the scripts
// reading TIME and with the store's time sent, and the real server of RLSIM_REDIS_URL
// when there is one.
func faces(t *testing.T) map[string]Store {
	t.Helper()
	out := map[string]Store{"model": NewModel(), "miniredis": miniFace(t)}
	explicit := miniFace(t)
	explicit.explicitClock = true
	out["miniredis-sent-time"] = explicit
	if url := getRedisURL(); url != "" {
		out["redis"] = realRedis(t)
	}
	return out
}

// The hidden case of a µs store: 20 requests, then one 199.999777 ms after the first on
// a window of 200 ms. Rounded to whole µs the two are exactly W apart and the first has
// left the log; to the ns it is still in it, and the 21st is refused, as the in-process
// log refuses it — on every face, by the node's clock and by the store's.
func TestSlidingLogDecidesToTheNanosecond(t *testing.T) {
	p := algorithms.Policy{Limit: 20, Window: 200 * time.Millisecond}
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano() + 999 // 999 ns past a µs
	times := make([]int64, 0, 22)
	for i := range 20 {
		times = append(times, base+int64(i)*int64(time.Millisecond))
	}
	last := base + 199_999_777
	times = append(times, last, base+int64(p.Window)) // then exactly W after the first: it has left
	if floorDiv(last, 1000)-floorDiv(base, 1000) != p.Window.Microseconds() {
		t.Fatal("the case lost its point: the two times are not a whole window apart in µs")
	}
	want := inProcess(t, "sliding-log", p, times)
	if admitted(want) != 21 || want[20] {
		t.Fatalf("in-process: %v, want the 21st refused and the 22nd admitted", want)
	}
	for _, clock := range []Clock{NodeClock, StoreClock} {
		for name, st := range faces(t) { // fresh faces: the store's clock never goes back
			got := onFace(t, st, "sliding-log", p, testPrefix(t, uint64(len(clock))), clock, times)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s, %s clock: %v, the in-process log %v", name, clock, got, want)
			}
		}
	}
}

// The two-counter window weighs the previous window by the ns: with 3 in the previous
// window of 100 ms and 9 in the current one, a request fits under 12 from a third of the
// window on, 33333333.3 ns in: refused at 33333333 ns, admitted at 33333334 — which both
// fall in the µs at 33333, where a µs store refuses them both.
func TestSlidingWindowWeighsToTheNanosecond(t *testing.T) {
	p := algorithms.Policy{Limit: 12, Window: 100 * time.Millisecond}
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	var times []int64
	for i := range 3 {
		times = append(times, start-int64(p.Window)+int64(i)) // the previous window
	}
	for i := range 9 {
		times = append(times, start+int64(i))
	}
	times = append(times, start+33_333_333, start+33_333_334)
	want := inProcess(t, "sliding-window", p, times)
	if admitted(want) != 13 || want[12] || !want[13] {
		t.Fatalf("in-process: %v, want the 13th refused and the 14th admitted", want)
	}
	for name, st := range faces(t) {
		got := onFace(t, st, "sliding-window", p, testPrefix(t, 1), NodeClock, times)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, in-process %v", name, got, want)
		}
	}
}

// On random traces with steps of a few ns to several windows, every shared script decides
// as its in-process algorithm does, request for request: the sliding log, the fixed
// window and the GCRA exactly (the GCRA's interval kept to the fraction of a ns), the
// two-counter window and the token bucket in integers where the in-process ones compute
// in float64, which could part from them only on an exact tie (none of these traces meets
// one). The model is checked on every trace, miniredis's scripts on the first few.
func TestSharedDecidesAsInProcess(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := randomPolicy(rng)
		times := make([]int64, 400)
		now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano() + rng.Int64N(int64(p.Window))
		for i := range times {
			switch r := rng.IntN(10); {
			case r < 3: // the same instant
			case r < 6:
				now += rng.Int64N(3000) // a few ns to a few µs
			case r < 7:
				now += int64(p.Window) - rng.Int64N(1000) // just short of a window
			default:
				now += rng.Int64N(int64(p.Window) / 5)
			}
			times[i] = now
		}
		for _, alg := range Algorithms() {
			want := inProcess(t, alg, p, times)
			shared := map[string]Store{"model": NewModel()}
			if seed <= 4 {
				shared["miniredis"] = miniFace(t)
			}
			for name, st := range shared {
				got := onFace(t, st, alg, p, "rl:", NodeClock, times)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("seed %d, %s on %s, %v: decision %d at %d differs: shared %v, in-process %v", seed, alg, name, p, i, times[i], got[i], want[i])
					}
				}
			}
			if admitted(want) == len(want) || admitted(want) == 0 {
				t.Fatalf("seed %d, %s: %d of %d admitted, nothing to compare", seed, alg, admitted(want), len(want))
			}
		}
	}
}

// getRedisURL is RLSIM_REDIS_URL.
func getRedisURL() string { return os.Getenv("RLSIM_REDIS_URL") }

func inProcess(t *testing.T, alg string, p algorithms.Policy, times []int64) []bool {
	t.Helper()
	lim, err := algorithms.New(alg, p)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]bool, len(times))
	for i, at := range times {
		out[i] = lim.Allow(0, at, 1).Allowed
	}
	return out
}

func onFace(t *testing.T, st Store, alg string, p algorithms.Policy, prefix string, clock Clock, times []int64) []bool {
	t.Helper()
	lim, err := NewLimiter(st, alg, p, prefix)
	if err != nil {
		t.Fatal(err)
	}
	lim.SetClock(clock)
	out := make([]bool, len(times))
	for i, at := range times {
		r, err := lim.Allow("user_8812", Now(at), 1)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r.Allowed
	}
	if r, ok := st.(*Redis); ok && r.mini == nil {
		deleteUnder(t, r, prefix)
	}
	return out
}

func admitted(d []bool) int {
	n := 0
	for _, ok := range d {
		if ok {
			n++
		}
	}
	return n
}
