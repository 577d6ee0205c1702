package cluster

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/store"
)

// startRedis starts a redis-server of its own on a free loopback port, for tests that
// reconfigure a server (maxmemory, REPLICAOF) and so must not touch the shared one; it
// stops it when the test ends. Like every real-server test it runs only where
// RLSIM_REDIS_URL is set (CI sets it), and needs redis-server on the PATH.
func startRedis(t *testing.T, args ...string) (url string, port int) {
	t.Helper()
	if os.Getenv("RLSIM_REDIS_URL") == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on the PATH")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, err := store.NewRedis(url)
		if err == nil {
			r.Close()
			return url, port
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serverInfo reads one integer field of INFO section.
func serverInfo(t *testing.T, r *store.Redis, section, field string) int64 {
	t.Helper()
	s, err := r.Client().Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// The eviction model against a real server: the same traffic — 20000 clients allowed one
// request per 10 minutes, 60000 requests — through a redis-server 7 whose keys may take
// 1.5 MiB, once evicting by itself (maxmemory, the policy), once through rlsim's model.
// The free passes agree within 10%, and so do the evictions, or under noeviction the
// refused writes, and the keys that got a free pass.
//
// The model counts the keys' memory; a server also spends memory of its own as it serves
// — its clients' buffers, what its scripts leave, some tens of kB here, changing as it
// runs — which its maxmemory counts too. So the test first runs the traffic on a server
// without maxmemory and takes that: what its used memory grew by beyond the model's count
// of the keys, on average over the run. Each server then gets maxmemory = its memory when
// empty + 1.5 MiB + that. (At 1.5 MiB the
// key tables' growth, which Redis refuses when it would pass maxmemory, is decided far
// from the edge.)
func TestEvictionMatchesARealServer(t *testing.T) {
	const maxmemory = 3 << 19
	const clients, requests = 20000, 60000
	within := func(what string, model, real int64, tolerance float64) {
		if real == 0 || math.Abs(float64(model-real))/float64(real) > tolerance {
			t.Errorf("%s: model %d, real server %d: more than %.0f%% apart", what, model, real, 100*tolerance)
		} else {
			t.Logf("%s: model %d, real server %d", what, model, real)
		}
	}
	// server starts a server of its own under policy, warms it (scripts loaded, the
	// connection's buffers grown, keys made and deleted) and returns it with its memory.
	server := func(policy string) (*store.Redis, int64) {
		url, _ := startRedis(t, "--maxmemory-policy", policy)
		r, err := store.NewRedis(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		r.SetNow(epoch)
		for i := range 2000 {
			k := "warm:" + strconv.Itoa(i)
			if _, err := r.Eval(store.FixedWindowScript, []string{k}, epoch/1000, 1, 1e6, 1, 1, 0); err != nil {
				t.Fatal(err)
			}
			if err := r.Delete(k); err != nil {
				t.Fatal(err)
			}
		}
		return r, serverInfo(t, r, "memory", "used_memory")
	}
	ctx := context.Background()

	r, base := server("noeviction")
	unlimited := Eviction{MaxMemory: 1 << 40, Policy: "noeviction", OutagePolicy: "fail-open"}
	var counted []int64 // the model's count of the keys' memory, every 5000 requests
	evictionTrafficEach(t, &unlimited, store.NewModel(), clients, requests, 1, 5000, func(f *Fleet) { counted = append(counted, f.evict.used()) })
	var own int64
	i := 0
	unlimited.Server = true
	evictionTrafficEach(t, &unlimited, r, clients, requests, 1, 5000, func(*Fleet) {
		own += serverInfo(t, r, "memory", "used_memory") - base - counted[i]
		i++
	})
	own /= int64(i)
	t.Logf("the server's own memory grew by %d B beside the keys, on average", own)
	if own < 0 || own > maxmemory/4 {
		t.Fatalf("the server's memory grew by %d B beside the keys the model counts", own)
	}

	for _, policy := range []string{"allkeys-lru", "noeviction"} {
		r, base := server(policy)
		if err := r.Client().ConfigSet(ctx, "maxmemory", strconv.FormatInt(base+maxmemory+own, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		ev := Eviction{MaxMemory: maxmemory, Policy: policy, OutagePolicy: "fail-open"}
		onServer := ev
		onServer.Server = true
		rf, _ := evictionTraffic(t, &onServer, r, clients, requests, 1)
		mf, _ := evictionTraffic(t, &ev, store.NewModel(), clients, requests, 1)
		real, model := rf.Designs(), mf.Designs()
		within(policy+": free passes", model.FreePasses, real.FreePasses, 0.10)
		if policy == "noeviction" {
			within(policy+": keys with a free pass", model.FreePassKeys, real.FreePassKeys, 0.10)
			within(policy+": refused writes", model.OOMErrors, real.OOMErrors, 0.10)
		} else {
			// Redis picks each victim among a sample of keys (maxmemory-samples 5), not the
			// least recently used of all: its evictions fall on fewer keys, more often
			// (about 8% fewer keys get the same free passes).
			within(policy+": keys with a free pass", model.FreePassKeys, real.FreePassKeys, 0.15)
			within(policy+": evicted keys", model.EvictedKeys, serverInfo(t, r, "stats", "evicted_keys"), 0.10)
		}
	}
}
