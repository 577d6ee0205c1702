package cmd

import (
	"fmt"
	"net"
	"time"

	"encoding/json"
	"github.com/rlsim/rlsim/store"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/report"
)

// fleetRun runs a scenario and returns its results by "algorithm/variant".
func fleetRun(t *testing.T, args ...string) map[string]report.Result {
	t.Helper()
	out, errOut, code := rlsim(t, append([]string{"run", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]report.Result{}
	for _, r := range rep.Results {
		if r.Distributed == nil {
			t.Fatalf("%s: no fleet figures in %s", r.Algorithm, out)
		}
		got[r.Algorithm+"/"+r.Variant] = r
	}
	return got
}

func TestClusterLocal(t *testing.T) {
	r := fleetRun(t, "cluster-local")
	// Ten nodes × 100/min, not recomputed on scale-out: one client spread over them.
	if d := r["sliding-log/scale-out-static"]; d.EffectiveLimit != 1000 || d.NodesMax != 10 {
		t.Errorf("static: effective %d nodes %d, want 1000 and 10", d.EffectiveLimit, d.NodesMax)
	}
	if d := r["sliding-log/scale-out-recomputed"]; d.EffectiveLimit != 100 {
		t.Errorf("recomputed: effective %d, want 100", d.EffectiveLimit)
	}
	// Hash routing with L/N per node: the client gets L/N.
	if d := r["sliding-log/ten-nodes-hash"]; d.EffectiveLimit != 10 || d.ClientShareMax != 0.1 {
		t.Errorf("hash: effective %d share %.2f, want 10 and 0.10", d.EffectiveLimit, d.ClientShareMax)
	}
}

func TestClusterShared(t *testing.T) {
	r := fleetRun(t, "cluster-shared")
	for _, alg := range []string{"fixed-window", "sliding-window"} {
		d := r[alg+"/shared"]
		if d.EffectiveLimit != 100 || d.StoreRoundTrips != 1 || d.AddedLatencyMeanMS != 1 {
			t.Errorf("%s: effective %d round trips %.3f latency %.2f, want 100, 1, 1ms", alg, d.EffectiveLimit, d.StoreRoundTrips, d.AddedLatencyMeanMS)
		}
	}
}

func TestClusterLeased(t *testing.T) {
	r := fleetRun(t, "cluster-leased")
	d := r["lease/lease-10"]
	if d.StoreRoundTrips < 0.03 || d.StoreRoundTrips > 0.12 {
		t.Errorf("lease 10: %.3f round trips per decision, want about 1/10", d.StoreRoundTrips)
	}
	if d.LeasesOutstandingMax <= 0 || d.LeasesOutstandingMax > 4*10 {
		t.Errorf("lease 10: %d outstanding, want within 4 nodes × 10", d.LeasesOutstandingMax)
	}
	// The central bucket (burst 10) grants at most L + burst in a window; leases
	// outstanding are all that can come on top.
	if d.EffectiveLimit > 100+10+d.LeasesOutstandingMax || d.EffectiveLimit <= 100 {
		t.Errorf("lease 10: effective %d, want above L and within L + burst + outstanding %d", d.EffectiveLimit, d.LeasesOutstandingMax)
	}
	if one := r["lease/lease-1"]; one.StoreRoundTrips < 5*d.StoreRoundTrips {
		t.Errorf("lease 1 should cost many more round trips: %.3f vs %.3f", one.StoreRoundTrips, d.StoreRoundTrips)
	}
}

func TestClusterNonAtomic(t *testing.T) {
	r := fleetRun(t, "cluster-nonatomic")
	if d := r["incr-expire/incr-expire-ttl-window"]; d.BlockedForever == 0 || d.Crashes == 0 {
		t.Errorf("ttl-window: blocked %d crashes %d, want both > 0", d.BlockedForever, d.Crashes)
	}
	if d := r["incr-expire/incr-expire-timestamped"]; d.BlockedForever != 0 || d.LeakedKeys == 0 || d.LeakedBytes == 0 {
		t.Errorf("timestamped: %+v", *d.Distributed)
	}
	for k, d := range r {
		if strings.HasSuffix(k, "/atomic-script") && (d.BlockedForever != 0 || d.LeakedKeys != 0) {
			t.Errorf("%s: %+v", k, *d.Distributed)
		}
	}
}

func TestClusterOutage(t *testing.T) {
	out, _, code := rlsim(t, "run", "cluster-outage")
	if code != 0 || !strings.Contains(out, "fail-open-local") || !strings.Contains(out, "alert: store unreachable") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	r := fleetRun(t, "cluster-outage")
	closed, open, local := r["sliding-window/fail-closed"], r["sliding-window/fail-open"], r["sliding-window/fail-open-local"]
	if closed.OutageAdmitted != 0 || closed.OutageRefused == 0 {
		t.Errorf("fail-closed: %+v", *closed.Distributed)
	}
	if open.OutageRefused != 0 || open.OutageAdmitted != closed.OutageRefused {
		t.Errorf("fail-open: %+v", *open.Distributed)
	}
	if local.OutageNodePeak != local.GuardLimit || local.OutageAdmitted == 0 || local.OutageRefused == 0 {
		t.Errorf("fail-open-local: %+v", *local.Distributed)
	}
	for _, d := range []report.Result{closed, open, local} {
		if d.Alerts != 1 {
			t.Errorf("%s: %d alerts", d.Variant, d.Alerts)
		}
		// Every decision in the outage called the store and waited the 50 ms timeout:
		// a third of the run, so the 99th percentile is the timeout and the median is not.
		if d.StoreTimeouts != d.OutageAdmitted+d.OutageRefused || d.AddedLatencyP99MS != 50 || d.AddedLatencyP50MS != 0 || d.BreakerOpenDecisions != 0 {
			t.Errorf("%s: %d timeouts, p50 %g p99 %g, %d breaker decisions", d.Variant, d.StoreTimeouts, d.AddedLatencyP50MS, d.AddedLatencyP99MS, d.BreakerOpenDecisions)
		}
	}
	// With a breaker each node waits a few timeouts and a probe now and then; the rest of
	// the outage, and the time until a probe finds the store back, decide at once.
	broken := r["sliding-window/fail-open-local-breaker"]
	if broken.StoreTimeouts == 0 || broken.StoreTimeouts > local.StoreTimeouts/20 || broken.BreakerOpenDecisions <= local.StoreTimeouts-broken.StoreTimeouts ||
		broken.AddedLatencyP99MS != 0 || broken.AddedLatencyMaxMS != 50 || broken.BreakerOpens < 10 {
		t.Errorf("breaker: %d timeouts (%d without), %d breaker decisions, %d opens, p99 %g max %g",
			broken.StoreTimeouts, local.StoreTimeouts, broken.BreakerOpenDecisions, broken.BreakerOpens, broken.AddedLatencyP99MS, broken.AddedLatencyMaxMS)
	}
}

// The read-decide-write race: over-admission grows with nodes and with the store's round
// trip; the atomic script beside it gives the same effective limit at every setting — the
// two-counter script exactly the limit.
func TestClusterRacy(t *testing.T) {
	r := fleetRun(t, "cluster-racy")
	if a := r["sliding-window/atomic-10n-50ms"]; a.EffectiveLimit != 100 {
		t.Errorf("the two-counter script on 10 nodes at 50 ms let %d through, want the limit, 100", a.EffectiveLimit)
	}
	nodes, rtts := []int{1, 2, 5, 10}, []string{"1ms", "10ms", "50ms"}
	for _, alg := range []string{"fixed-window", "sliding-window", "token-bucket"} {
		get := func(kind string, n int, rtt string) report.Result {
			x, ok := r[fmt.Sprintf("%s/%s-%dn-%s", alg, kind, n, rtt)]
			if !ok {
				t.Fatalf("%s: no %s variant for %d nodes, %s", alg, kind, n, rtt)
			}
			return x
		}
		atomic := get("atomic", 1, "1ms").EffectiveLimit
		for li, rtt := range rtts {
			for ni, n := range nodes {
				racy := get("racy", n, rtt)
				if a := get("atomic", n, rtt); a.EffectiveLimit != atomic || a.StaleReads != 0 {
					t.Errorf("%s atomic, %d nodes, %s: effective %d, %d stale reads; at 1 node, 1ms %d", alg, n, rtt, a.EffectiveLimit, a.StaleReads, atomic)
				}
				if n == 1 && (racy.EffectiveLimit != atomic || racy.StaleReads != 0) {
					t.Errorf("%s racy on one node, %s: effective %d, atomic %d", alg, rtt, racy.EffectiveLimit, atomic)
				}
				if ni > 0 && racy.EffectiveLimit < get("racy", nodes[ni-1], rtt).EffectiveLimit {
					t.Errorf("%s racy, %s: fewer admitted with %d nodes than with %d", alg, rtt, n, nodes[ni-1])
				}
				if li > 0 && racy.EffectiveLimit < get("racy", n, rtts[li-1]).EffectiveLimit {
					t.Errorf("%s racy, %d nodes: fewer admitted at %s than at %s", alg, n, rtt, rtts[li-1])
				}
			}
		}
		corner, fewer, faster := get("racy", 10, "50ms").EffectiveLimit, get("racy", 2, "50ms").EffectiveLimit, get("racy", 10, "1ms").EffectiveLimit
		if corner <= fewer || corner <= faster || fewer <= atomic {
			t.Errorf("%s: 10 nodes × 50 ms %d, 2 nodes × 50 ms %d, 10 nodes × 1 ms %d, atomic %d", alg, corner, fewer, faster, atomic)
		}
	}
}

// The same scenario on the Lua scripts (miniredis) decides exactly as on the model.
func TestClusterScriptsEqualModel(t *testing.T) {
	data, err := os.ReadFile("../scenarios/cluster-nonatomic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Fewer requests (miniredis runs a few thousand scripts a second), a tighter limit.
	text := strings.Replace(string(data), "poisson: {rate: 10,", "poisson: {rate: 2,", 1)
	text = strings.Replace(text, "limit: 10,", "limit: 2,", 1)
	model := filepath.Join(t.TempDir(), "model.yaml")
	mini := filepath.Join(t.TempDir(), "mini.yaml")
	os.WriteFile(model, []byte(text), 0o644)
	os.WriteFile(mini, []byte(strings.Replace(text, "  placement: shared-nonatomic\n", "  placement: shared-nonatomic\n  store: miniredis\n", 1)), 0o644)
	a, b := fleetRun(t, model), fleetRun(t, mini)
	for k, x := range a {
		y := b[k]
		dx, dy := *x.Distributed, *y.Distributed
		if dx.Store != "model" || dy.Store != "miniredis" {
			t.Fatalf("%s: stores %q and %q", k, dx.Store, dy.Store)
		}
		dx.Store, dy.Store = "", ""
		x.Distributed, y.Distributed = nil, nil
		jx, _ := json.Marshal([]any{x, dx})
		jy, _ := json.Marshal([]any{y, dy})
		if string(jx) != string(jy) {
			t.Errorf("%s differs:\n model     %s\n miniredis %s", k, jx, jy)
		}
		if x.Rejected == 0 {
			t.Errorf("%s: nothing refused; the comparison proves little", k)
		}
	}
}

// On a real Redis (RLSIM_REDIS_URL): the atomic scripts leave every key with a TTL, the
// crashes of INCR-then-EXPIRE block keys for good, and the run deletes what it wrote.
func TestClusterOnRealRedis(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	data, err := os.ReadFile("../scenarios/cluster-nonatomic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("rlsim-test-run-%d:", time.Now().UnixNano())
	text := strings.Replace(strings.Replace(strings.Replace(string(data), "rate: 10,", "rate: 4,", 1), "limit: 10,", "limit: 3,", 1), "  placement: shared-nonatomic\n",
		fmt.Sprintf("  placement: shared-nonatomic\n  store: redis\n  redis_url: %q\n  prefix: %q\n", url, prefix), 1)
	file := filepath.Join(t.TempDir(), "real.yaml")
	os.WriteFile(file, []byte(text), 0o644)
	r := fleetRun(t, file)
	for k, d := range r {
		if d.Store != "redis" {
			t.Fatalf("%s ran on %q", k, d.Store)
		}
		if strings.HasSuffix(k, "/atomic-script") && (d.BlockedForever != 0 || d.LeakedKeys != 0) {
			t.Errorf("%s: blocked %d leaked %d", k, d.BlockedForever, d.LeakedKeys)
		}
	}
	if d := r["incr-expire/incr-expire-ttl-window"]; d.BlockedForever == 0 {
		t.Errorf("ttl-window on real Redis: nothing blocked: %+v", *d.Distributed)
	}
	st, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if left, err := st.Keys(prefix); err != nil || len(left) != 0 {
		t.Fatalf("the run left %d keys under its prefix (%v)", len(left), err)
	}
}

func TestClusterGolden(t *testing.T) {
	for _, format := range []string{"table", "json"} {
		out, errOut, code := rlsim(t, "run", "cluster-outage", "--format", format)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		golden(t, "cluster-outage."+format, out)
	}
	out, _, _ := rlsim(t, "memory", "--keys", "1000000")
	golden(t, "memory-model.table", out)
}

// A scenario whose Redis refuses connections fails at once with one line.
func TestClusterUnreachableRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	data, _ := os.ReadFile("../scenarios/cluster-shared.yaml")
	text := strings.Replace(string(data), "  placement: shared\n", "  placement: shared\n  store: redis\n  redis_url: redis://"+addr+"\n", 1)
	file := filepath.Join(t.TempDir(), "down.yaml")
	os.WriteFile(file, []byte(text), 0o644)
	start := time.Now()
	out, errOut, code := rlsim(t, "run", file)
	if code != 1 || out != "" || !strings.Contains(errOut, "cluster.redis_url: store unavailable") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if d := time.Since(start); d > 2*store.Timeout {
		t.Fatalf("took %s", d)
	}
}
