package claims

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/store"
)

func TestUnmeasuredClaimsAreNeverPassed(t *testing.T) {
	got, err := Run([]Check{{Claim: "c", Command: "rlsim x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != (Result{Claim: "c", Measured: "-", Verdict: NotYetMeasurable, Command: "rlsim x"}) {
		t.Fatalf("got %+v", got[0])
	}
}

func TestBrokenReproductionIsAnError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Run([]Check{{Claim: "c", Measure: func() (string, Verdict, error) { return "", "", boom }}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `claim "c"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestEveryClaimHasWordsAndACommand(t *testing.T) {
	all := All()
	if len(all) < 15 {
		t.Fatalf("%d claims, the notes make 15", len(all))
	}
	for _, c := range all {
		if c.Claim == "" || !strings.HasPrefix(c.Command, "rlsim ") {
			t.Errorf("claim %+v lacks words or an rlsim command", c)
		}
	}
}

// The cheap reproductions, measured for real: the figures the notes give.
func TestMeasuredClaims(t *testing.T) {
	tests := []struct {
		name    string
		measure measureFunc
		verdict Verdict
		want    string
	}{
		{"boundary", boundaryBurst("boundary-burst", 100), Holds, "admitted 200 of 200 between 10:00:59.900 and 10:01:00.100 (200ms)"},
		{"boundary 6000", boundaryBurst("boundary-6000", 6000), Holds, "admitted 12000 of 12000"},
		{"estimate 95", slidingEstimate, Holds, "5 of 10 admitted"},
		{"shorter window", shorterWindow, Holds, "100 requests at 100/min (2.00×), 2 at 2/s (2.00×)"},
		{"token bucket", tokenBucketBurst, Holds, "20 of 21 admitted at once"},
		{"log per element", slidingLogPerElementWith(Config{}), HoldsWithCaveat, "= 21 bytes each; in Redis, per entry: 33 B at limit 128 (listpack), 121 B at limit 256 (skiplist) — Redis 7.0.15 calibration model"},
		{"log at 1M keys", slidingLogAtMillionKeys(Config{}), Holds, "3656 B per key (listpack encoding, 100 entries) × 1000000 keys = 3.4 GiB (3.7 GB) for 100M entries; the two counters take 168 MiB — Redis 7.0.15 calibration model"},
		{"log vs counters", logToCountersRatioWith(Config{}), DoesNotHold, "at limit 100 in Redis: 3656 vs 176 bytes per key = 20.8× (1.3 orders of magnitude); in-process: 2096 vs 24 = 87× (1.9); in Redis at limit 1000, past the sorted set's switch to a skiplist: 672× (2.8)"},
		{"incr/expire crash", incrExpireCrash, Holds, "200 clients at 3.0/min against 10 per 1m0s on 5 nodes, 2% crash chance: counter whose window is its TTL — 18 crashes, 10 keys left without a TTL at the limit (blocked_forever), 6 users refused every request from some moment to the end of the run (the longest for 2m43s); key named by window — 18 keys leaked (1584 bytes), none blocked; atomic scripts (fixed-window, sliding-log, sliding-window, token-bucket, gcra) — 0 blocked, 0 leaked, 0 users shut out"},
		{"local limits scale out", localScaleOut, Holds, "one client at 50/s round-robin, 1 → 10 nodes at 1m0s with 100 per 1m0s each: not recomputed, the fleet admitted up to 1000 in one trailing window (10.00× the limit); recomputed to L/N on scaling, 100"},
		{"uneven routing", unevenRouting, Holds, "10 nodes with 10 per 1m0s each (L/N of 100), one client at 50/s: hash routing pins it to one node — 10 admitted in one window at most (client share 0.10), 8970 of 9000 refused; round-robin spreads it — 100"},
		{"page load fan-out", pageLoadFanOut, Holds, "sliding-log 80.5%, sliding-window 68.3%, token-bucket 0.11%"},
		{"full jitter", fullJitter, HoldsWithCaveat, "full jitter 795 calls in 4.8 s; exponential 1856 in 63.5 s (full makes 0.43× the calls)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, v, err := tt.measure()
			if err != nil {
				t.Fatal(err)
			}
			if v != tt.verdict || !strings.Contains(m, tt.want) {
				t.Errorf("got %q, %q; want %q containing %q", v, m, tt.verdict, tt.want)
			}
		})
	}
}

// The two claims measured on the long scenarios, run in full once.
func TestMeasuredClaimsOnLongScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs steady-poisson three times")
	}
	m, v, err := anyWindowTwice()
	if err != nil {
		t.Fatal(err)
	}
	if v != Holds || !strings.Contains(m, "boundary-burst 2.00×") {
		t.Errorf("any window twice: %q, %q", v, m)
	}
	m, v, err = twoCounterErrorRate()
	if err != nil {
		t.Fatal(err)
	}
	if v == NotYetMeasurable || !strings.Contains(m, "differing from the exact sliding log") {
		t.Errorf("two-counter error: %q, %q", v, m)
	}
}

// Every claim of the notes now has a measurement; none is left as not yet measurable.
func TestEveryClaimIsMeasured(t *testing.T) {
	for _, c := range All() {
		if c.Measure == nil {
			t.Errorf("claim %q has no measurement", c.Claim)
		}
	}
}

// With RLSIM_REDIS_URL set (as .ci/run sets it) the memory claims measure on that server,
// say so, and leave nothing behind under their prefix.
func TestMemoryClaimsOnRealRedis(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	cfg := Config{RedisURL: url}
	for name, measure := range map[string]measureFunc{
		"per element": slidingLogPerElementWith(cfg),
		"1M keys":     slidingLogAtMillionKeys(cfg),
		"ratio":       logToCountersRatioWith(cfg),
	} {
		m, v, err := measure()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(m, "measured on Redis") || strings.Contains(m, "model") || v == NotYetMeasurable {
			t.Errorf("%s: %q, %q", name, v, m)
		}
	}
	m, _, _ := slidingLogAtMillionKeys(cfg)()
	if !strings.Contains(m, "MEMORY USAGE of 1000 clients' keys extrapolated to 1000000") {
		t.Errorf("1M keys does not say it extrapolates: %q", m)
	}
	r, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if keys, err := r.Keys(MemoryPrefix); err != nil || len(keys) > 0 {
		t.Errorf("left %d keys under %s (%v)", len(keys), MemoryPrefix, err)
	}
	if !strings.Contains(AllWith(cfg)[7].Command, "--redis URL --load 1000") {
		t.Errorf("command does not name the server: %q", AllWith(cfg)[7].Command)
	}
}

// A server that refuses connections is an error naming it, at once, not a model figure.
func TestMemoryClaimsRefusedServer(t *testing.T) {
	_, _, err := slidingLogAtMillionKeys(Config{RedisURL: "redis://127.0.0.1:1/0"})()
	if err == nil || !strings.Contains(err.Error(), "Redis for the memory claims: store unavailable") {
		t.Fatalf("err = %v", err)
	}
}
