package probe

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/server"
)

// probeServe probes rlsim's own server running spec (with policy for a textbook
// algorithm) with the identification traffic (cmd/testdata/probe-identify.yaml: a burst
// on a fresh key, a stream above the rate, sparse requests after a burst, bursts 5.2 s
// apart and Poisson keys, over 25 s) on a clock that jumps to each due time, and returns
// what it observed.
func probeServe(t *testing.T, spec string, pol algorithms.Policy) Observed {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "cmd", "testdata", "probe-identify.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := FromScenario(sc, sc.SeedOr(scenario.DefaultSeed), 1, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range plan.Requests {
		plan.Requests[i].Cost = 1
	}
	if pol.Limit == 0 {
		pol = algorithms.Policy{Limit: 1, Window: time.Second}
	}
	lim, err := algorithms.New(spec, pol)
	if err != nil {
		t.Fatal(err)
	}
	// A start off the second and the millisecond, as a probe's start is.
	clock := &fakeClock{t: time.Unix(1_767_261_600, 345_678_901)}
	h, err := server.New(server.Config{Limiter: lim, Policy: response.Policy{Name: "p", Policy: pol}, Key: "header:X-User",
		MaxDelay: time.Hour, Now: clock.Now, Wait: func(context.Context, time.Duration) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	xs, err := Run(context.Background(), plan, Target{URL: "http://rlsim.test/", KeyHeader: "X-User", Concurrency: 1,
		Timeout: time.Second, RefusedCodes: []int{429}, Transport: inProcess(h)}, clock, start)
	if err != nil {
		t.Fatal(err)
	}
	obs := Observe(xs, start, []int{429})
	if len(obs.Decisions) != len(plan.Requests) {
		t.Fatalf("%d decisions of %d requests", len(obs.Decisions), len(plan.Requests))
	}
	return obs
}

// TestIdentifyNamesTheLimiterBehindTheServer puts several configurations of nginx's and
// HAProxy's models, and of textbook algorithms, behind rlsim serve: Identify must name
// each product's configuration exactly, with every decision reproduced, and for a textbook
// algorithm find one that reproduces every decision (a product's model that decides alike
// is named first). Agree must reproduce every decision of the truth and part from a
// neighbouring configuration's. (The in-process server answers at once, so nginx without
// nodelay cannot be told from nodelay here: TestPatternSeesDelays.)
func TestIdentifyNamesTheLimiterBehindTheServer(t *testing.T) {
	for _, tt := range []struct {
		spec   string
		policy algorithms.Policy
		// other is a neighbouring configuration that must not agree as well.
		other string
	}{
		{spec: "nginx:rate=10r/s burst=20 nodelay", other: "nginx:rate=10r/s burst=19 nodelay"},
		{spec: "nginx:rate=5r/s burst=8 nodelay", other: "nginx:rate=6r/s burst=8 nodelay"},
		{spec: "haproxy:period=10s gt=20", other: "haproxy:period=5s gt=20"},
		{spec: "haproxy:period=2s gt=8", other: "haproxy:period=2s gt=9"},
		{spec: "fixed-window", policy: algorithms.Policy{Limit: 20, Window: time.Second}, other: "sliding-log"},
		{spec: "token-bucket", policy: algorithms.Policy{Limit: 10, Window: time.Second, Burst: 15}, other: "nginx:rate=10r/s burst=15 nodelay"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			obs := probeServe(t, tt.spec, tt.policy)
			got, p, err := Identify(obs, 8)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("pattern %+v; best %s: %s", p, got[0].Name(), got[0].Agreement)
			if got[0].Agreement.Rate() != 1 {
				t.Fatalf("best %s agrees on %s", got[0].Name(), got[0].Agreement)
			}
			truth, err := Agree(obs, tt.spec, tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			if truth.Agreed != truth.Decisions {
				t.Fatalf("the truth agrees on %s: %+v", truth, truth.Differences)
			}
			if len(algorithms.Lookup(tt.spec).Params) > 0 {
				if got[0].Spec != algorithms.Canonical(tt.spec) {
					t.Fatalf("identified %s, want %s", got[0].Name(), tt.spec)
				}
			}
			otherPolicy := tt.policy
			wrong, err := Agree(obs, tt.other, otherPolicy)
			if err != nil {
				t.Fatal(err)
			}
			if wrong.Agreed+wrong.WithinJitter == wrong.Decisions {
				t.Fatalf("%s agrees as well as %s: the traffic does not tell them apart", tt.other, tt.spec)
			}
		})
	}
}

// TestPatternSeesDelays: admissions answered well after the quickest exchange mark a
// queueing limiter, and Grid then tries nginx without nodelay.
func TestPatternSeesDelays(t *testing.T) {
	at := []float64{0, 1, 2, 3, 4, 5, 6, 300, 400, 500}
	ok := []bool{true, true, true, false, false, false, false, true, true, true}
	for _, delayed := range []bool{false, true} {
		ds := decisions(at, ok)
		for i := range ds {
			ds[i].Answered += int64(200 * time.Microsecond)
			if delayed && i == 1 {
				ds[i].Answered += int64(100 * time.Millisecond)
			}
		}
		p, err := ReadPattern(Estimate(ds))
		if err != nil {
			t.Fatal(err)
		}
		if p.Delayed != delayed || p.FirstRun != 3 {
			t.Fatalf("delayed %v: %+v", delayed, p)
		}
		nodelay := 0
		for _, c := range Grid(p) {
			if strings.HasPrefix(c.Spec, "nginx:") && strings.HasSuffix(c.Spec, " nodelay") {
				nodelay++
			}
		}
		if (nodelay == 0) != delayed {
			t.Fatalf("delayed %v: %d nginx candidates with nodelay", delayed, nodelay)
		}
	}
}

// decisions builds decisions of key "a", admitted or not, at the given milliseconds
// after a second's start, each sent and answered at once.
func decisions(at []float64, admitted []bool) []Decision {
	base := time.Unix(1_767_261_600, 0).UnixNano()
	var ds []Decision
	for i, ms := range at {
		t := base + int64(ms*float64(time.Millisecond))
		ds = append(ds, Decision{Key: "a", Cost: 1, Sent: t, Answered: t, Admitted: admitted[i]})
	}
	return ds
}

func TestPromiseVerdictHoldsWithinJitter(t *testing.T) {
	pol := algorithms.Policy{Limit: 10, Window: time.Second}
	every := func(n int, gap float64) ([]float64, []bool) {
		var at []float64
		var ok []bool
		for i := range n {
			at = append(at, float64(i)*gap)
			ok = append(ok, true)
		}
		return at, ok
	}
	for _, tt := range []struct {
		name    string
		n       int
		gap     float64 // ms
		verdict string
		// uncertain is the verdict's count.
		uncertain int64
	}{
		// nginx at 10r/s with no burst: one request every 100 ms, the eleventh exactly a
		// second after the first, a hair inside or outside a window by the jitter.
		{"11 a second apart", 11, 99.9, Kept, 1},
		{"11 at 100ms", 11, 100, Kept, 1},
		{"12 in a hair over a second", 12, 90.95, Broke, 0},
		{"11 well spread", 11, 105, Kept, 0},
		{"12 in 990ms", 12, 90, Broke, 0},
		{"10 at once", 10, 0, Kept, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at, ok := every(tt.n, tt.gap)
			p := JudgePromise(Estimate(decisions(at, ok)), pol)
			if p.Verdict != tt.verdict || p.Uncertain != tt.uncertain {
				t.Fatalf("%s (%d), want %s (%d): %+v", p.Verdict, p.Uncertain, tt.verdict, tt.uncertain, p)
			}
		})
	}
}

// TestPromiseJudgesFalseRejectsInArrivalOrder: a refusal stamped before the admissions
// it follows on the wire is judged after them, so it is no false reject; and one that
// only jitter separates from a full window is counted apart.
func TestPromiseJudgesFalseRejectsInArrivalOrder(t *testing.T) {
	pol := algorithms.Policy{Limit: 2, Window: time.Second}
	ds := decisions([]float64{0, 10, 5, 1500, 2000.5, 3000}, []bool{true, true, false, true, false, false})
	// The refusal at 5 ms arrived last of the three: after the two admissions.
	ds[2].Sent += int64(20 * time.Millisecond)
	ds[2].Answered = ds[2].Sent
	p := JudgePromise(Estimate(ds), pol)
	// Sorted: 0 ✓, 10 ✓, 25 ✗ (full: right), 1500 ✓, 2000.5 ✗ (the window (1000.5,
	// 2000.5] holds the 1500 alone: allowed whatever the jitter), 3000 ✗ (false).
	if p.FalseRejects != 2 || p.FalseRejectsWithinJitter != 0 {
		t.Fatalf("%+v", p)
	}
	ds = decisions([]float64{0, 10, 1000.5}, []bool{true, true, false})
	p = JudgePromise(Estimate(ds), pol)
	if p.FalseRejects != 0 || p.FalseRejectsWithinJitter != 1 || p.Allowed[2] != PromiseEither {
		t.Fatalf("a refusal 0.5 ms past the window: %+v", p)
	}
}

// TestAgreeExplainsAnEdgeByJitter: a server whose clock ran 0.4 ms ahead of the probe's
// estimate decided one request on the far side of nginx's millisecond; the model on the
// estimated arrival differs there, and agrees with the arrival moved within the jitter.
func TestAgreeExplainsAnEdgeByJitter(t *testing.T) {
	const spec = "nginx:rate=10r/s"
	lim, _ := algorithms.New(spec, algorithms.Policy{Limit: 1, Window: time.Second})
	at := []float64{0.2, 99.7, 150, 300, 400.1}
	var ok []bool
	for _, ms := range at {
		ok = append(ok, lim.Allow(0, time.Unix(1_767_261_600, 0).UnixNano()+int64((ms+0.4)*float64(time.Millisecond)), 1).Allowed)
	}
	obs := Estimate(decisions(at, ok))
	a, err := Agree(obs, spec, algorithms.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Agreed+a.WithinJitter != a.Decisions || a.WithinJitter == 0 || a.Jitter != MinJitter {
		t.Fatalf("%+v", a)
	}
	// The same decisions against a model twice as fast: a real difference.
	a, err = Agree(obs, "nginx:rate=20r/s", algorithms.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	real := 0
	for _, d := range a.Differences {
		if !d.WithinJitter {
			real++
		}
	}
	if real == 0 {
		t.Fatalf("nginx at 20r/s agrees: %+v", a)
	}
}

func TestIdentifyNeedsARefusal(t *testing.T) {
	obs := Estimate(decisions([]float64{0, 500, 1000}, []bool{true, true, true}))
	if _, _, err := Identify(obs, 3); err != ErrNothingRefused {
		t.Fatalf("%v", err)
	}
	if _, err := Agree(obs, "nginx:rate=fast", algorithms.Policy{}); err == nil {
		t.Fatal("a bad spec agreed")
	}
}

// FuzzReadDecisions: any input is read or refused with an error naming it, never a
// panic, and what is read is in order of arrival with a jitter of at least MinJitter.
func FuzzReadDecisions(f *testing.F) {
	header := strings.Join(DecisionColumns, ",") + "\n"
	f.Add(header + "1,a,5,6,200,true,true,true\n2,a,7,9,429,false,false,either\n")
	f.Add(header + "1,a,5,6,200,,,\n")
	f.Add("seq,key\n1,a\n")
	f.Add(header + "1,\"a,b\",5,6,200,true,,\n3,b,1,2,429,false,,\n")
	f.Fuzz(func(t *testing.T, data string) {
		obs, err := ReadDecisions(strings.NewReader(data), "f.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") {
				t.Fatalf("error not naming the file: %v", err)
			}
			return
		}
		if obs.Jitter < MinJitter || len(obs.Decisions) == 0 {
			t.Fatalf("%+v", obs)
		}
		for i := 1; i < len(obs.Decisions); i++ {
			if obs.Decisions[i].Arrival < obs.Decisions[i-1].Arrival {
				t.Fatalf("out of order: %+v", obs.Decisions)
			}
		}
	})
}
