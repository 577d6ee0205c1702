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

// arrival is one request of a trace: its time since the epoch, its client and cost.
type arrival struct {
	at   time.Duration
	key  uint32
	cost int64
}

// poissonTrace is rate requests per second for d, in time order, over keys clients,
// costs 1 or 2 when costly.
func poissonTrace(seed uint64, rate float64, d time.Duration, keys int, costly bool) []arrival {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []arrival
	for at := time.Duration(rng.ExpFloat64() / rate * 1e9); at < d; at += time.Duration(rng.ExpFloat64() / rate * 1e9) {
		a := arrival{at: at, key: uint32(rng.IntN(keys)), cost: 1}
		if costly {
			a.cost += rng.Int64N(2)
		}
		out = append(out, a)
	}
	return out
}

// replay decides trace on a new fleet and returns each decision ("1 7" for admitted with
// 7 remaining) and the fleet's figures.
func replay(t *testing.T, c Config, alg string, p algorithms.Policy, st store.Store, trace []arrival) ([]string, *report.Distributed) {
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
	out := make([]string, 0, len(trace))
	for _, a := range trace {
		if int(a.key) >= f.Keys() {
			for k := f.Keys(); k <= int(a.key); k++ {
				f.SetName(uint32(k), fmt.Sprintf("user_%d", k))
			}
		}
		d := f.Allow(a.key, epoch+int64(a.at), a.cost)
		out = append(out, fmt.Sprintf("%v %d", d.Allowed, d.Remaining))
	}
	res, err := finish("test")
	if err != nil {
		t.Fatal(err)
	}
	return out, res
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// A node never races with itself, and a write that lands at once is seen by the next
// read: one node at any latency, any number of nodes at zero latency, or nodes that each
// hold their own clients (hash routing) decide request for request as the atomic script.
func TestRacyWithoutConcurrencyDecidesAsTheScript(t *testing.T) {
	p := algorithms.Policy{Limit: 20, Window: 10 * time.Second, Burst: 15}
	trace := poissonTrace(3, 40, 35*time.Second, 3, true)
	for _, alg := range RacyAlgorithms() {
		for _, c := range []Config{
			{Nodes: 1, Balancer: "round-robin", Latency: 50 * time.Millisecond},
			{Nodes: 1, Balancer: "round-robin", Latency: 3 * time.Second},
			{Nodes: 7, Balancer: "round-robin", Latency: 0},
			{Nodes: 7, Balancer: "hash", Latency: 50 * time.Millisecond}, // one node per client
		} {
			c.Placement = "shared"
			want, wantRes := replay(t, c, alg, p, store.NewModel(), trace)
			c.Placement = "shared-racy"
			got, res := replay(t, c, alg, p, store.NewModel(), trace)
			if i := firstDifference(got, want); i >= 0 {
				t.Fatalf("%s, %d nodes, latency %s: decision %d is %s, the script's %s", alg, c.Nodes, c.Latency, i, got[i], want[i])
			}
			if res.StaleReads != 0 || res.EffectiveLimit != wantRes.EffectiveLimit {
				t.Errorf("%s, %d nodes, latency %s: %d stale reads, effective %d (script %d)", alg, c.Nodes, c.Latency, res.StaleReads, res.EffectiveLimit, wantRes.EffectiveLimit)
			}
		}
	}
}

// The edge of the race, on a fixed timeline: limit 1, two nodes taking turns, a 10 ms
// round trip. A read one round trip after another node's read sees that node's write; a
// read 1 ns sooner does not. A node sees its own write at once.
func TestRacyWriteLandsOneRoundTripAfterItsRead(t *testing.T) {
	p := algorithms.Policy{Limit: 1, Window: time.Minute}
	rtt := 10 * time.Millisecond
	c := Config{Nodes: 2, Balancer: "round-robin", Placement: "shared-racy", Latency: rtt}
	for _, tc := range []struct {
		name  string
		trace []arrival
		want  []string
	}{
		{"another node one round trip later", []arrival{{at: 0}, {at: rtt}}, []string{"true 0", "false 0"}},
		{"another node 1ns sooner", []arrival{{at: 0}, {at: rtt - 1}}, []string{"true 0", "true 0"}},
		{"the same node at once", []arrival{{at: 0}, {at: 1, key: 1}, {at: 2}}, []string{"true 0", "true 0", "false 0"}},
	} {
		got, _ := replay(t, c, "fixed-window", p, store.NewModel(), tc.trace)
		if strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The acceptance figure: a flood on one key, nodes × round trip. The read-decide-write
// fleet lets more through as either grows; the atomic script gives the same figure at
// every setting.
func TestRacyOverAdmissionGrowsWithNodesAndLatency(t *testing.T) {
	p := algorithms.Policy{Limit: 100, Window: 10 * time.Second}
	trace := poissonTrace(11, 500, 40*time.Second, 1, false)
	nodes := []int{1, 2, 5, 10}
	latencies := []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond}
	for _, alg := range []string{"fixed-window", "token-bucket"} {
		effective := map[[2]int]int64{}
		var atomic int64 = -1
		for ni, n := range nodes {
			for li, l := range latencies {
				c := Config{Nodes: n, Balancer: "round-robin", Placement: "shared-racy", Latency: l}
				_, res := replay(t, c, alg, p, store.NewModel(), trace)
				effective[[2]int{ni, li}] = res.EffectiveLimit
				c.Placement = "shared"
				_, script := replay(t, c, alg, p, store.NewModel(), trace)
				if atomic == -1 {
					atomic = script.EffectiveLimit
				}
				if script.EffectiveLimit != atomic {
					t.Errorf("%s atomic, %d nodes, %s: effective %d, elsewhere %d", alg, n, l, script.EffectiveLimit, atomic)
				}
				if n == 1 && res.EffectiveLimit != atomic {
					t.Errorf("%s racy on one node, %s: effective %d, atomic %d", alg, l, res.EffectiveLimit, atomic)
				}
				if n > 1 && (res.EffectiveLimit < atomic || res.StaleReads == 0) {
					t.Errorf("%s racy, %d nodes, %s: effective %d (atomic %d), %d stale reads", alg, n, l, res.EffectiveLimit, atomic, res.StaleReads)
				}
				if ni > 0 && res.EffectiveLimit < effective[[2]int{ni - 1, li}] {
					t.Errorf("%s racy, %s: %d nodes let %d through, fewer nodes %d", alg, l, n, res.EffectiveLimit, effective[[2]int{ni - 1, li}])
				}
				if li > 0 && res.EffectiveLimit < effective[[2]int{ni, li - 1}] {
					t.Errorf("%s racy, %d nodes: %s lets %d through, a shorter round trip %d", alg, n, l, res.EffectiveLimit, effective[[2]int{ni, li - 1}])
				}
			}
		}
		// Strictly more at the corner than along either edge that leads to it.
		last, slow := len(nodes)-1, len(latencies)-1
		most, fewNodes, fast := effective[[2]int{last, slow}], effective[[2]int{1, slow}], effective[[2]int{last, 0}]
		if most <= fewNodes || most <= fast || fewNodes <= atomic {
			t.Errorf("%s: 10 nodes × 50 ms let %d through, 2 nodes × 50 ms %d, 10 nodes × 1 ms %d, atomic %d", alg, most, fewNodes, fast, atomic)
		}
		t.Logf("%s: atomic %d, racy %v", alg, atomic, effective)
	}
}

// A write that lands while the store is down is lost: the count it carried is never seen.
func TestRacyWriteLandingInAnOutageIsLost(t *testing.T) {
	p := algorithms.Policy{Limit: 2, Window: time.Minute}
	c := Config{Nodes: 1, Balancer: "round-robin", Placement: "shared-racy", Latency: 10 * time.Millisecond,
		Outages: []Outage{{At: 5 * time.Millisecond, For: time.Second, Policy: "fail-closed"}}}
	trace := []arrival{{at: 0}, {at: 2 * time.Second}, {at: 3 * time.Second}, {at: 4 * time.Second}}
	got, res := replay(t, c, "fixed-window", p, store.NewModel(), trace)
	want := "true 1, true 1, true 0, false 0" // the first admission is forgotten
	if strings.Join(got, ", ") != want || res.LostWrites != 1 {
		t.Errorf("%v, %d lost writes; want %s and 1", got, res.LostWrites, want)
	}
}

// The placement runs on the store's plain commands on every face: the model and
// miniredis decide alike and leave the same keys, counters and TTLs; a real Redis
// (RLSIM_REDIS_URL) decides alike too.
func TestRacyFacesAgree(t *testing.T) {
	p := algorithms.Policy{Limit: 12, Window: 2 * time.Second, Burst: 9}
	trace := poissonTrace(5, 60, 9*time.Second, 3, true)
	c := Config{Nodes: 4, Balancer: "random", Placement: "shared-racy", Latency: 20 * time.Millisecond, Skew: 30 * time.Millisecond}
	for _, alg := range RacyAlgorithms() {
		model := store.NewModel()
		want, wantRes := replay(t, c, alg, p, model, trace)
		mini, err := store.NewMiniredis()
		if err != nil {
			t.Fatal(err)
		}
		got, res := replay(t, c, alg, p, mini, trace)
		if i := firstDifference(got, want); i >= 0 {
			t.Fatalf("%s: decision %d on miniredis is %s, on the model %s", alg, i, got[i], want[i])
		}
		if wantRes.StaleReads == 0 || res.StaleReads != wantRes.StaleReads || res.LeakedKeys != 0 {
			t.Errorf("%s: stale reads %d / %d, leaked %d", alg, wantRes.StaleReads, res.StaleReads, res.LeakedKeys)
		}
		mk, _ := model.Keys("rl:")
		rk, err := mini.Keys("rl:")
		if err != nil {
			t.Fatal(err)
		}
		if len(mk) == 0 || len(mk) != len(rk) {
			t.Fatalf("%s: %d keys on the model, %d on miniredis", alg, len(mk), len(rk))
		}
		for i := range mk {
			a, b := mk[i], rk[i]
			if a.Name != b.Name || a.Type != b.Type || a.Value != b.Value || a.Len != b.Len || (a.TTL-b.TTL).Abs() > time.Millisecond {
				t.Errorf("%s: key %+v on the model, %+v on miniredis", alg, a, b)
			}
		}
		mini.Close()
	}
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set: no real Redis to run against")
	}
	server, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	for _, alg := range RacyAlgorithms() {
		rc := c
		rc.Prefix = fmt.Sprintf("rlsim-test-racy:%d:", time.Now().UnixNano())
		want, _ := replay(t, c, alg, p, store.NewModel(), trace)
		got, res := replay(t, rc, alg, p, server, trace)
		if i := firstDifference(got, want); i >= 0 {
			t.Errorf("%s: decision %d on Redis is %s, on the model %s", alg, i, got[i], want[i])
		}
		keys, err := server.Keys(rc.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range keys {
			names = append(names, k.Name)
			if k.TTL == store.NoTTL {
				t.Errorf("%s: %s has no TTL on Redis", alg, k.Name)
			}
		}
		if len(keys) == 0 || res.LeakedKeys != 0 {
			t.Errorf("%s: %d keys, %d leaked", alg, len(keys), res.LeakedKeys)
		}
		if err := server.Delete(names...); err != nil {
			t.Fatal(err)
		}
	}
}

// keepForever is the model with every TTL stretched a million times: nothing expires.
type keepForever struct{ *store.Model }

func (k keepForever) IncrExpire(key string, n, ms int64) (int64, error) {
	return k.Model.IncrExpire(key, n, ms*1e6)
}
func (k keepForever) SetExpire(key string, v, ms int64) error {
	return k.Model.SetExpire(key, v, ms*1e6)
}
func (k keepForever) SetBucket(key string, t, s, ms int64) error {
	return k.Model.SetBucket(key, t, s, ms*1e6)
}

// The TTLs are garbage collection only: with skewed clocks, long round trips and idle
// gaps, a store where nothing expires decides exactly alike.
func TestRacyExpiryNeverDecides(t *testing.T) {
	p := algorithms.Policy{Limit: 8, Window: 2 * time.Second, Burst: 5}
	trace := poissonTrace(9, 30, 40*time.Second, 4, true)
	// Bursts after idle spells of about a window, the moments a key is near its TTL.
	for b := range 10 {
		at := 40*time.Second + time.Duration(b)*(2*time.Second+time.Duration(b)*137*time.Millisecond)
		for k := range 12 {
			trace = append(trace, arrival{at: at + time.Duration(k)*time.Millisecond, key: uint32(k % 2), cost: 1})
		}
	}
	c := Config{Nodes: 5, Balancer: "round-robin", Placement: "shared-racy", Latency: 80 * time.Millisecond, Skew: 900 * time.Millisecond}
	for _, alg := range RacyAlgorithms() {
		want, _ := replay(t, c, alg, p, keepForever{store.NewModel()}, trace)
		got, _ := replay(t, c, alg, p, store.NewModel(), trace)
		if i := firstDifference(got, want); i >= 0 {
			t.Errorf("%s: decision %d is %s where nothing expires, %s with TTLs", alg, i, want[i], got[i])
		}
	}
}

func TestRacyRefusesWhatItCannotRun(t *testing.T) {
	c := Config{Nodes: 2, Balancer: "round-robin", Placement: "shared-racy"}
	if _, err := New(c, "sliding-log", perMinute, store.NewModel(), rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), `"sliding-log"`) {
		t.Errorf("sliding-log: %v", err)
	}
	if _, err := New(c, "gcra", perMinute, &failingStore{}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "plain read and write") {
		t.Errorf("a store without GET and SET: %v", err)
	}
}
