package run

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/cluster"
	"github.com/rlsim/rlsim/internal/redistest"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/store"
)

// cluster-eviction's free passes on the model equal, within 10%, those on a real
// redis-server 7 given the same maxmemory and policy, evicting by itself: its allkeys-lru
// and noeviction variants at 224 kB, and the evictions or the writes refused.
//
// The scenario's maxmemory is the memory its keys may take. A server also spends memory of
// its own as it serves — its clients' buffers, what its scripts and evictions leave, tens
// to a hundred kB here, varying as it runs — which its maxmemory counts too. So as the run
// goes, every 100 decisions, the test reads from MEMORY STATS how many keys the server
// holds and its key tables' sizes, counts their memory as the model does (every key's name
// is the same length here), and sets maxmemory to that plus the variant's maxmemory plus
// what the server uses beyond: its keys then get the variant's maxmemory, as in the model.
func TestEvictionScenarioMatchesARealServer(t *testing.T) {
	sc, err := scenario.Load("cluster-eviction")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{}
	pol, layers, seed := o.Policy(sc), layerPolicies(sc, o), sc.SeedOr(scenario.DefaultSeed)
	variants := fleetVariants(sc, pol)
	// A prefix short enough that every counter's name, "{account_N}:fw:" and the window
	// index after it, takes the 48-byte allocation perKey counts.
	const alg, prefix = "fixed-window", "rlsim-evict:"
	ctx := context.Background()
	for _, name := range []string{"lru-224kb", "noeviction-open"} {
		i := slices.IndexFunc(variants, func(v fleetVariant) bool { return v.name == name })
		if i < 0 {
			t.Fatalf("cluster-eviction has no variant %s", name)
		}
		ev := *variants[i].cfg.Eviction
		url, _ := redistest.Start(t, "--maxmemory-policy", ev.Policy)
		r, err := store.NewRedis(url)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		// The memory model's count of one key: a counter named prefix + "{account_N}:fw:"
		// + the window index, with a TTL; its own integer object under an LRU policy.
		perKey := int64(48 + 32 + 32)
		if ev.Policy == "allkeys-lru" {
			perKey += 16
		}
		run := func(st store.Store, server bool, each func(*cluster.Fleet)) cluster.DesignFigures {
			v := variants[i]
			e := ev
			e.Server = server
			v.cfg.Eviction, v.cfg.Prefix = &e, prefix
			fleet, err := cluster.New(v.cfg, alg, pol, st, sim.NewRNG(seed^uint64(i+1)*0x9e3779b97f4a7c15, sim.RunStream))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runOneWith(context.Background(), sc, builder{name: alg}, layers, seed, nil, nil, &sampled{Fleet: fleet, each: each}); err != nil {
				t.Fatal(err)
			}
			if _, err := fleet.Finish(); err != nil {
				t.Fatal(err)
			}
			return fleet.Designs()
		}
		var own int64
		room := func(*cluster.Fleet) {
			stats, err := r.Client().Do(ctx, "MEMORY", "STATS").Result()
			if err != nil {
				t.Fatal(err)
			}
			keys, main, expires := memoryStats(stats)
			tables := (main-keys*(24+16))/8*8 + (expires-keys*24)/8*8 // the slots of both
			used := redistest.Info(t, r, "memory", "used_memory")
			own = used - keys*perKey - tables
			if err := r.Client().ConfigSet(ctx, "maxmemory", strconv.FormatInt(own+ev.MaxMemory, 10)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		room(nil)
		real := run(r, true, room)
		model := run(store.NewModel(), false, nil)
		within := func(what string, m, rl int64, tolerance float64) {
			if rl == 0 || math.Abs(float64(m-rl)) > tolerance*float64(rl) {
				t.Errorf("%s: %s: model %d, real server %d: more than %.0f%% apart", name, what, m, rl, 100*tolerance)
			}
		}
		within("free passes", model.FreePasses, real.FreePasses, 0.10)
		if ev.Policy == "noeviction" {
			within("refused writes", model.OOMErrors, real.OOMErrors, 0.10)
		} else {
			// Redis picks each victim among a few sampled keys by an LRU clock of 1 s
			// resolution, and this run fits its two minutes in a second or two: its
			// choices are close to random, and it evicts about 9% more than the exact
			// LRU of the model; the free passes, which the keys asked again make, agree.
			within("evicted keys", model.EvictedKeys, redistest.Info(t, r, "stats", "evicted_keys"), 0.15)
		}
		t.Logf("%s: free passes model %d, real %d (keys %d, %d); refused writes model %d, real %d; evicted keys model %d; the server's memory beside its keys at the end %d B",
			name, model.FreePasses, real.FreePasses, model.FreePassKeys, real.FreePassKeys, model.OOMErrors, real.OOMErrors, model.EvictedKeys, own)
	}
}

// memoryStats reads MEMORY STATS' key count and db 0's main and expires hash table
// overheads, from a RESP3 map or a RESP2 list of pairs.
func memoryStats(stats any) (keys, main, expires int64) {
	pairs := func(v any) map[string]any {
		out := map[string]any{}
		switch m := v.(type) {
		case map[any]any:
			for k, x := range m {
				out[fmt.Sprint(k)] = x
			}
		case []any:
			for i := 0; i+1 < len(m); i += 2 {
				out[fmt.Sprint(m[i])] = m[i+1]
			}
		}
		return out
	}
	top := pairs(stats)
	db := pairs(top["db.0"])
	keys, _ = top["keys.count"].(int64)
	main, _ = db["overhead.hashtable.main"].(int64)
	expires, _ = db["overhead.hashtable.expires"].(int64)
	return keys, main, expires
}

// sampled is a fleet that calls each after every 100 decisions.
type sampled struct {
	*cluster.Fleet
	each func(*cluster.Fleet)
	n    int
}

func (s *sampled) Allow(key uint32, now, cost int64) algorithms.Decision {
	d := s.Fleet.Allow(key, now, cost)
	if s.n++; s.each != nil && s.n%100 == 0 {
		s.each(s.Fleet)
	}
	return d
}
