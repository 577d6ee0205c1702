package cluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

var epoch = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()

// drive sends clients requests each at rate per second from 0 to d, in time order, and
// returns the fleet's figures and the admitted count.
func drive(t *testing.T, c Config, alg string, p algorithms.Policy, st store.Store, clients int, rate float64, d time.Duration) (*report.Distributed, int64) {
	t.Helper()
	c.Epoch = epoch
	if c.Prefix == "" {
		c.Prefix = "rl:"
	}
	f, err := New(c, alg, p, st, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	finish := metered(f, p)
	for k := range clients {
		f.SetName(uint32(k), fmt.Sprintf("user_%d", k))
	}
	step := time.Duration(float64(time.Second) / rate)
	var admitted int64
	for at := time.Duration(0); at < d; at += step {
		for k := range clients {
			if f.Allow(uint32(k), epoch+int64(at), 1).Allowed {
				admitted++
			}
		}
	}
	res, err := finish("test")
	if err != nil {
		t.Fatal(err)
	}
	return res, admitted
}

var perMinute = algorithms.Policy{Limit: 100, Window: time.Minute}

// The notes: ten nodes with 100/min each, not recomputed on scale-out, let one client
// spread over them have 1000/min.
func TestLocalScaleOutWithoutRecompute(t *testing.T) {
	c := Config{Nodes: 1, Balancer: "round-robin", Placement: "local", Scale: []Scale{{At: time.Minute, Nodes: 10}}}
	res, _ := drive(t, c, "sliding-log", perMinute, nil, 1, 50, 3*time.Minute)
	if res.EffectiveLimit != 1000 {
		t.Errorf("effective limit %d, want 1000 (10 nodes × 100)", res.EffectiveLimit)
	}
	c.LocalRecompute = true
	res, _ = drive(t, c, "sliding-log", perMinute, nil, 1, 50, 3*time.Minute)
	// Recomputed: 10 per node; the rebuilt counters forget the minute before the change.
	if res.EffectiveLimit > 200 {
		t.Errorf("recomputed effective limit %d, want about the limit", res.EffectiveLimit)
	}
}

// With hash routing and L/N per node, one client lands on one node and gets L/N.
func TestLocalHashGivesOneClientLOverN(t *testing.T) {
	c := Config{Nodes: 10, Balancer: "hash", Placement: "local"}
	res, _ := drive(t, c, "sliding-log", algorithms.Policy{Limit: 1000, Window: time.Minute}, nil, 3, 50, 2*time.Minute)
	if res.EffectiveLimit != 100 || res.ClientShareMax != 0.1 {
		t.Errorf("effective %d share %.2f, want 100 and 0.10", res.EffectiveLimit, res.ClientShareMax)
	}
}

func TestSharedIsExactWithOneRoundTrip(t *testing.T) {
	for _, alg := range store.Algorithms() {
		c := Config{Nodes: 10, Balancer: "round-robin", Placement: "shared"}
		res, _ := drive(t, c, alg, perMinute, store.NewModel(), 2, 20, 3*time.Minute)
		if res.StoreRoundTrips != 1 {
			t.Errorf("%s: %.3f round trips per decision", alg, res.StoreRoundTrips)
		}
		limit := perMinute.Limit
		if alg == "token-bucket" || alg == "gcra" || alg == "fixed-window" {
			limit *= 2 // by design they admit up to burst + L per window
		}
		if res.EffectiveLimit > limit || res.BlockedForever != 0 || res.LeakedKeys != 0 {
			t.Errorf("%s: %+v", alg, res)
		}
	}
}

func TestLeasedCutsRoundTrips(t *testing.T) {
	c := Config{Nodes: 4, Balancer: "round-robin", Placement: "leased", Lease: 10}
	// One client under the limit (90/min) and one far over it (1200/min): a node spends
	// leased tokens locally, and after a short grant waits a lease's refill before asking.
	res, admitted := drive(t, c, "token-bucket", perMinute, store.NewModel(), 1, 1.5, 3*time.Minute)
	over, _ := drive(t, c, "token-bucket", perMinute, store.NewModel(), 1, 20, 3*time.Minute)
	if over.StoreRoundTrips > 0.05 {
		t.Errorf("over the limit: %.3f round trips per decision", over.StoreRoundTrips)
	}
	if res.StoreRoundTrips > 0.15 || res.StoreRoundTrips < 0.05 {
		t.Errorf("%.3f round trips per decision, want about 1/10", res.StoreRoundTrips)
	}
	if res.LeasesOutstandingMax == 0 || res.LeasesOutstandingMax > 4*10 {
		t.Errorf("leases outstanding %d, want within nodes × lease", res.LeasesOutstandingMax)
	}
	// The central bucket grants at most burst + L per window; leases add at most what
	// is outstanding.
	if res.EffectiveLimit > 2*perMinute.Limit+res.LeasesOutstandingMax {
		t.Errorf("effective %d beyond the bound", res.EffectiveLimit)
	}
	if admitted == 0 {
		t.Fatal("nothing admitted")
	}
}

// INCR then EXPIRE with crashes blocks TTL-window keys for good; the atomic script never
// leaves a key without a TTL. Checked on the model, on miniredis and on a real Redis
// (RLSIM_REDIS_URL), which must find the same keys blocked and leaked.
func TestNonAtomicCrashBlocksForever(t *testing.T) {
	faces := []string{"model", "miniredis"}
	if os.Getenv("RLSIM_REDIS_URL") != "" {
		faces = append(faces, "redis")
	}
	twentyPerMinute := algorithms.Policy{Limit: 20, Window: time.Minute}
	var want []string
	for _, name := range faces {
		var got []string
		c := Config{Nodes: 3, Balancer: "round-robin", Placement: "shared-nonatomic", TTLWindowKey: true, CrashProbability: 0.2}
		c.Prefix = facePrefix(name)
		res, _ := drive(t, c, "fixed-window", twentyPerMinute, openFace(t, name, c.Prefix), 10, 0.5, 3*time.Minute)
		if res.BlockedForever == 0 || res.Crashes == 0 {
			t.Errorf("%s: ttl-window with crashes: %+v", name, res)
		}
		got = append(got, fmt.Sprintf("ttl-window: blocked %d leaked %d crashes %d", res.BlockedForever, res.LeakedKeys, res.Crashes))
		c.TTLWindowKey = false
		c.Prefix = facePrefix(name)
		res, _ = drive(t, c, "fixed-window", twentyPerMinute, openFace(t, name, c.Prefix), 10, 0.5, 3*time.Minute)
		if res.BlockedForever != 0 || res.LeakedKeys == 0 || res.LeakedBytes == 0 {
			t.Errorf("%s: timestamped keys with crashes should leak, not block: %+v", name, res)
		}
		got = append(got, fmt.Sprintf("timestamped: blocked %d leaked %d crashes %d", res.BlockedForever, res.LeakedKeys, res.Crashes))
		atomic := Config{Nodes: 3, Balancer: "round-robin", Placement: "shared", Prefix: facePrefix(name)}
		st := openFace(t, name, atomic.Prefix)
		res, _ = drive(t, atomic, "fixed-window", twentyPerMinute, st, 10, 0.5, 3*time.Minute)
		keys, _ := st.Keys(atomic.Prefix)
		for _, k := range keys {
			if k.TTL == store.NoTTL {
				t.Errorf("%s: the atomic script left %s without a TTL", name, k.Name)
			}
		}
		if res.BlockedForever != 0 || res.LeakedKeys != 0 || len(keys) == 0 {
			t.Errorf("%s: atomic: %+v, %d keys", name, res, len(keys))
		}
		if want == nil {
			want = got
		} else if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s finds %v where the model finds %v", name, got, want)
		}
	}
}

// facePrefix is a key prefix of its own for each run on a face, so runs on a shared real
// server never meet.
func facePrefix(face string) string {
	return fmt.Sprintf("rlsim-test-fleet:%s:%d:", face, time.Now().UnixNano())
}

// openFace opens a store face for one run, closed (and on a real server emptied of what
// the run wrote under prefix) when the test ends.
func openFace(t *testing.T, name, prefix string) store.Store {
	t.Helper()
	switch name {
	case "model":
		return store.NewModel()
	case "miniredis":
		r, err := store.NewMiniredis()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	r, err := store.NewRedis(os.Getenv("RLSIM_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if keys, err := r.Keys(prefix); err == nil {
			names := make([]string, len(keys))
			for i, k := range keys {
				names[i] = k.Name
			}
			r.Delete(names...)
		}
		r.Close()
	})
	return r
}

func TestOutagePolicies(t *testing.T) {
	for _, tc := range []struct {
		policy string
		check  func(*report.Distributed) bool
	}{
		{"fail-closed", func(d *report.Distributed) bool { return d.OutageAdmitted == 0 && d.OutageRefused > 0 }},
		{"fail-open", func(d *report.Distributed) bool { return d.OutageRefused == 0 && d.OutageAdmitted > 0 }},
		{"fail-open-local", func(d *report.Distributed) bool {
			return d.OutageAdmitted > 0 && d.OutageRefused > 0 && d.OutageNodePeak == d.GuardLimit
		}},
	} {
		c := Config{Nodes: 4, Balancer: "round-robin", Placement: "shared",
			Outages: []Outage{{At: time.Minute, For: time.Minute, Policy: tc.policy}}}
		res, _ := drive(t, c, "sliding-window", perMinute, store.NewModel(), 2, 20, 3*time.Minute)
		if !tc.check(res) || res.Alerts != 1 || res.Alert == "" {
			t.Errorf("%s: %+v", tc.policy, res)
		}
	}
}

func TestLatencyAndSkew(t *testing.T) {
	c := Config{Nodes: 4, Balancer: "random", Placement: "shared", Latency: 2 * time.Millisecond}
	res, _ := drive(t, c, "fixed-window", perMinute, store.NewModel(), 1, 5, time.Minute)
	if res.AddedLatencyMeanMS != 2 || res.AddedLatencyMaxMS != 2 {
		t.Errorf("added latency %.2f/%.2f ms, want 2", res.AddedLatencyMeanMS, res.AddedLatencyMaxMS)
	}
	// Skewed node clocks disagree on the fixed window's boundary: more gets through.
	straight, _ := drive(t, Config{Nodes: 10, Balancer: "round-robin", Placement: "shared"}, "fixed-window", perMinute, store.NewModel(), 1, 50, 3*time.Minute)
	skewed, _ := drive(t, Config{Nodes: 10, Balancer: "round-robin", Placement: "shared", Skew: 20 * time.Second}, "fixed-window", perMinute, store.NewModel(), 1, 50, 3*time.Minute)
	if skewed.EffectiveLimit <= straight.EffectiveLimit {
		t.Errorf("skew should let more through: %d vs %d", skewed.EffectiveLimit, straight.EffectiveLimit)
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Nodes: 2, Balancer: "hash", Placement: "shared"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{Nodes: 0, Balancer: "hash", Placement: "shared"},
		{Nodes: 2, Balancer: "sticky", Placement: "shared"},
		{Nodes: 2, Balancer: "hash", Placement: "nowhere"},
		{Nodes: 2, Balancer: "hash", Placement: "shared", CrashProbability: 2},
		{Nodes: 2, Balancer: "hash", Placement: "shared", Outages: []Outage{{At: 0, For: 0, Policy: "fail-open"}}},
		{Nodes: 2, Balancer: "hash", Placement: "shared", Outages: []Outage{{At: 0, For: time.Second, Policy: "shrug"}}},
		{Nodes: 2, Balancer: "hash", Placement: "shared", Scale: []Scale{{At: 2, Nodes: 3}, {At: 1, Nodes: 4}}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: want an error", c)
		}
	}
}

// On a real Redis (RLSIM_REDIS_URL) every key the atomic scripts wrote has a TTL.
func TestSharedKeysHaveTTLOnRealRedis(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	r, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	prefix := fmt.Sprintf("rlsim-test-fleet:%d:", time.Now().UnixNano())
	for _, alg := range store.Algorithms() {
		c := Config{Nodes: 3, Balancer: "round-robin", Placement: "shared", Prefix: prefix}
		res, _ := drive(t, c, alg, perMinute, r, 5, 1, 2*time.Minute)
		keys, err := r.Keys(prefix)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range keys {
			names = append(names, k.Name)
			if k.TTL == store.NoTTL {
				t.Errorf("%s: key %s has no TTL", alg, k.Name)
			}
		}
		if len(keys) == 0 || res.BlockedForever != 0 || res.LeakedKeys != 0 {
			t.Errorf("%s: %d keys, %+v", alg, len(keys), res)
		}
		if err := r.Delete(names...); err != nil {
			t.Fatal(err)
		}
	}
}

// failingStore answers like a store that has gone away.
type failingStore struct {
	store.Store
	calls int
}

func (s *failingStore) Eval(*store.Script, []string, ...int64) ([]int64, error) {
	s.calls++
	return nil, store.ErrUnavailable
}

func (s *failingStore) SetNow(int64) error { return nil }

func (s *failingStore) Name() string { return "failing" }

// After the first store error the fleet stops calling the store (each call could wait
// out a timeout) and the run reports the error.
func TestStoreErrorStopsTheRun(t *testing.T) {
	st := &failingStore{}
	f, err := New(Config{Nodes: 2, Balancer: "round-robin", Placement: "shared", Epoch: epoch}, "gcra", perMinute, st, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(100) {
		if f.Allow(0, epoch+i*int64(time.Second), 1).Allowed {
			t.Fatal("admitted without a store")
		}
	}
	if st.calls != 1 {
		t.Errorf("%d store calls after the store failed, want 1", st.calls)
	}
	if _, err := f.Finish(); err == nil {
		t.Error("Finish did not report the store error")
	}
}

// onModelAndMiniredis runs run once on the store's model and once on a fresh embedded
// miniredis, and returns what each printed: a placement's faces agree when the two match.
func onModelAndMiniredis(t *testing.T, run func(store.Store) string) (model, mini string) {
	t.Helper()
	m, err := store.NewMiniredis()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return run(store.NewModel()), run(m)
}
