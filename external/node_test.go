package external

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// NodeProgram is the command that runs the example program examples/node/name, which
// drives a real npm library on rlsim's clock, with args; or a skip when Node.js or the
// library is missing. The libraries are looked for in RLSIM_NODE_MODULES, else in
// examples/node/node_modules (npm ci --prefix examples/node puts them there). With
// RLSIM_NODE_MODULES set, as CI sets it, a missing node or library fails the test instead.
func nodeProgram(t *testing.T, name, args string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "examples", "node"))
	if err != nil {
		t.Fatal(err)
	}
	modules, required := os.LookupEnv("RLSIM_NODE_MODULES")
	if !required {
		modules = filepath.Join(dir, "node_modules")
	}
	missing := func(what string) {
		t.Helper()
		if required {
			t.Fatalf("RLSIM_NODE_MODULES=%s is set, but %s", modules, what)
		}
		t.Skipf("%s (npm ci --prefix examples/node installs the libraries)", what)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed")
	}
	for _, lib := range []string{"express-rate-limit", "rate-limiter-flexible"} {
		if _, err := os.Stat(filepath.Join(modules, lib, "package.json")); err != nil {
			missing(lib + " is not in " + modules)
		}
	}
	return "NODE_PATH='" + modules + "' node '" + filepath.Join(dir, name) + "' " + args
}

// libraryRequests are n requests over five keys, each arriving on average every step, in
// time order, on a millisecond grid with some
// stamps inside a millisecond: runs at one instant, gaps of whole milliseconds that land
// windows' ends exactly, and a few long pauses; costs mostly 1, some above the limit.
func libraryRequests(n int, seed uint64, step time.Duration, limit int64) []testRequest {
	rng := rand.New(rand.NewPCG(seed, 2))
	now := int64(1767261600) * int64(time.Second)
	out := make([]testRequest, n)
	for i := range out {
		switch r := rng.IntN(20); {
		case r < 5: // the same instant
		case r < 19:
			now += int64(time.Millisecond) * rng.Int64N(2*int64(step/time.Millisecond)/5+1)
		default:
			now += int64(time.Millisecond) * rng.Int64N(20*int64(step/time.Millisecond)/5)
		}
		at := now
		if rng.IntN(3) == 0 {
			at += rng.Int64N(int64(time.Millisecond))
		}
		cost := int64(1)
		switch rng.IntN(12) {
		case 0:
			cost = 1 + rng.Int64N(3)
		case 1:
			cost = limit + 1
		}
		out[i] = testRequest{key: uint32(rng.IntN(5)), now: at, cost: cost}
	}
	return out
}

// TestNodeLibrariesDecideAsTheirModels runs express-rate-limit (MemoryStore) and
// rate-limiter-flexible (RateLimiterMemory) themselves under Node.js, their clock replaced
// by the requests' virtual time (examples/node/clock.js), beside rlsim's models of them on
// the same seeded requests, and requires every decision to be the same: admitted or
// refused, and when refused the same retry-after to the nanosecond. Requests run on a
// millisecond grid so that windows open and end on the exact milliseconds where the
// libraries' comparisons (resetTime <= now, expiresAt − now > 0) decide.
func TestNodeLibrariesDecideAsTheirModels(t *testing.T) {
	cases := []struct {
		program, spec string
		step          time.Duration // a key's mean gap, about its limit's
		limit         int64
	}{
		{"express_rate_limit.js", "express-rate-limit:windowMs=1000 limit=5", 200 * time.Millisecond, 5},
		{"express_rate_limit.js", "express-rate-limit:windowMs=250 limit=2", 125 * time.Millisecond, 2},
		{"rate_limiter_flexible.js", "rate-limiter-flexible:points=5 duration=1", 200 * time.Millisecond, 5},
		{"rate_limiter_flexible.js", "rate-limiter-flexible:points=3 duration=0.25", 80 * time.Millisecond, 3},
		{"rate_limiter_flexible.js", "rate-limiter-flexible:points=3 duration=2 blockDuration=1.5", 600 * time.Millisecond, 3},
		{"rate_limiter_flexible.js", "rate-limiter-flexible:points=4 duration=1 blockDuration=5", 500 * time.Millisecond, 4},
	}
	for i, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			_, params, _ := strings.Cut(c.spec, ":")
			e, err := NewExec(nodeProgram(t, c.program, params), os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if want := strings.TrimSuffix(c.program, ".js"); e.Name() != want {
				t.Errorf("name %q, want %q", e.Name(), want)
			}
			p := algorithms.Policy{Limit: 100, Window: time.Minute} // the programs take the spec's own parameters
			model, err := algorithms.New(c.spec, p)
			if err != nil {
				t.Fatal(err)
			}
			l, err := e.New(p)
			if err != nil {
				t.Fatal(err)
			}
			lib := l.(Limiter)
			reqs := libraryRequests(4000, uint64(i+1), c.step, c.limit)
			want := make([]algorithms.Decision, len(reqs))
			for j, r := range reqs {
				lib.SetName(r.key, "k"+strconv.Itoa(int(r.key)))
				lib.Send(r.key, r.now, r.cost)
				want[j] = model.Allow(r.key, r.now, r.cost)
			}
			admitted := 0
			for j, w := range want {
				got := lib.Receive()
				if got.Allowed != w.Allowed || got.RetryAfter != w.RetryAfter {
					t.Fatalf("request %d %+v (+%v): the library %v retry %v, the model %v retry %v",
						j+1, reqs[j], time.Duration(reqs[j].now-reqs[0].now), got.Allowed, got.RetryAfter, w.Allowed, w.RetryAfter)
				}
				if w.Allowed {
					admitted++
				}
			}
			if err := lib.Close(); err != nil {
				t.Fatal(err)
			}
			if admitted < len(reqs)/5 || admitted > len(reqs)*4/5 {
				t.Fatalf("%d of %d admitted: the requests do not exercise both outcomes", admitted, len(reqs))
			}
			t.Logf("%d requests, %d admitted, every decision the library's", len(reqs), admitted)
		})
	}
}
