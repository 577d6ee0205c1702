package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/internal/testnet"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/store"
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

// cluster-skew: by the store's clock every algorithm keeps its no-skew effective limit
// (within 1.05×) at every skew; by the nodes' clocks the token bucket and GCRA stay within
// b + L·(W + 2·skew)/W, and the fixed window stretches with the skew.
func TestClusterSkew(t *testing.T) {
	r := fleetRun(t, "cluster-skew")
	if len(r) != 60 {
		t.Fatalf("%d rows, want 5 algorithms × 12 variants", len(r))
	}
	for key, d := range r {
		alg, variant, _ := strings.Cut(key, "/")
		clock, _, _ := strings.Cut(variant, "-")
		skew := time.Duration(d.Skew).Seconds()
		if d.Clock != clock || d.Placement != "shared" {
			t.Fatalf("%s: clock %q placement %s", key, d.Clock, d.Placement)
		}
		base := r[alg+"/"+clock+"-0s"].EffectiveLimit
		if clock == "store" && float64(d.EffectiveLimit) > 1.05*float64(base) {
			t.Errorf("%s: effective %d, above 1.05× the no-skew %d", key, d.EffectiveLimit, base)
		}
		if bound := 100 + 100*(60+2*skew)/60; (alg == "token-bucket" || alg == "gcra") && float64(d.EffectiveLimit) > bound {
			t.Errorf("%s: effective %d above b + L·(W + 2·skew)/W = %.1f", key, d.EffectiveLimit, bound)
		}
	}
	if a, b := r["fixed-window/node-5s"].EffectiveLimit, r["fixed-window/store-5s"].EffectiveLimit; a <= b {
		t.Errorf("fixed window at ±5s: %d by node clocks, %d by the store's: skew should stretch it", a, b)
	}
	// docs/distributed.md shows the run's figures: a row per algorithm and clock, a column
	// per skew.
	doc, err := os.ReadFile("../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	skews := []string{"0s", "0.5s", "1s", "2s", "3s", "5s"}
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 2+len(skews) || (cells[1] != "node" && cells[1] != "store") {
			continue
		}
		rows++
		for i, skew := range skews {
			key := cells[0] + "/" + cells[1] + "-" + skew
			if want := fmt.Sprint(r[key].EffectiveLimit); cells[2+i] != want {
				t.Errorf("docs/distributed.md shows %s for %s; the run gives %s", cells[2+i], key, want)
			}
		}
	}
	if rows != 10 {
		t.Errorf("docs/distributed.md has %d rows of the cluster-skew table, want 10", rows)
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
	t.Parallel()
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

// clusterFiles writes every built-in scenario with a cluster section to a file of its own,
// with a key prefix no other run uses and the lines edit makes, and returns the files by
// scenario name.
func clusterFiles(t *testing.T, edit func(name, text string) string) (names []string, files map[string]string) {
	t.Helper()
	files = map[string]string{}
	dir := t.TempDir()
	for _, name := range scenario.Builtins() {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Cluster == nil {
			continue
		}
		prefix := fmt.Sprintf("rlsim-test-%s-%d:", name, time.Now().UnixNano())
		text := strings.Replace(string(sc.Text), "\ncluster:\n", fmt.Sprintf("\ncluster:\n  prefix: %q\n", prefix), 1)
		if !strings.Contains(text, prefix) {
			t.Fatalf("%s: no cluster section to put a prefix in", name)
		}
		files[name] = filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(files[name], []byte(edit(name, text)), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if len(names) < 7 {
		t.Fatalf("only %d built-in cluster scenarios: %v", len(names), names)
	}
	return names, files
}

// sameOnFaces runs file on the embedded model and as extra flags say, and requires the
// same JSON results byte for byte but for the store's name.
func sameOnFaces(t *testing.T, name, file, face string, extra ...string) {
	t.Helper()
	want, errOut, code := rlsim(t, "run", file, "--format", "json")
	if code != 0 {
		t.Fatalf("%s on the model: exit %d: %s", name, code, errOut)
	}
	got, errOut, code := rlsim(t, append([]string{"run", file, "--format", "json"}, extra...)...)
	if code != 0 {
		t.Fatalf("%s on %s: exit %d: %s", name, face, code, errOut)
	}
	// A scenario whose fleets use no store (node-local limits, an owner per key) runs
	// alike anywhere; one that uses it must have run on face.
	if strings.Contains(want, `"store": "model"`) && !strings.Contains(got, `"store": "`+face+`"`) {
		t.Fatalf("%s did not run on %s", name, face)
	}
	if got = strings.ReplaceAll(got, `"store": "`+face+`"`, `"store": "model"`); got != want {
		t.Errorf("%s on %s differs from the model:\n%s", name, face, firstDiff(want, got))
	}
}

// firstDiff shows the first line where two outputs part.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n model: %s\n other: %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("one output is %d lines, the other %d", len(al), len(bl))
}

// Every built-in cluster scenario, run as `rlsim run NAME --redis URL` would (pipelined
// where the placement allows it) on the real server of RLSIM_REDIS_URL, gives the
// embedded model's results byte for byte — skewed clocks, store outages, crashes between
// INCR and EXPIRE and all — and leaves no key behind.
func TestBuiltinClustersOnRealRedis(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	st, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// cluster-racy makes two round trips a decision over 72 fleets of 60000 requests: on a
	// real server, its ten-node variants at 10 and 50 ms, for ten seconds at 100 a second
	// (still several writes in flight at once, so the race shows).
	racyVariant := regexp.MustCompile(`(?m)^    - \{name: \w+-(\dn|10n-1ms)[-\w]*, .*\n`)
	names, files := clusterFiles(t, func(name, text string) string {
		if name != "cluster-racy" {
			return text
		}
		text = racyVariant.ReplaceAllString(text, "")
		return strings.Replace(text, "{rate: 500, keys: 1, key_prefix: flood_, end: 2m}", "{rate: 100, keys: 1, key_prefix: flood_, end: 10s}", 1)
	})
	start := time.Now()
	for _, name := range names {
		sameOnFaces(t, name, files[name], "redis", "--redis", url)
		text, _ := os.ReadFile(files[name])
		prefix := strings.Split(strings.Split(string(text), "prefix: \"")[1], "\"")[0]
		if left, err := st.Keys(prefix); err != nil || len(left) != 0 {
			t.Errorf("%s left %d keys under its prefix (%v)", name, len(left), err)
		}
	}
	t.Logf("%d built-in cluster scenarios on the real server in %s", len(names), time.Since(start).Round(time.Millisecond))
}

// The same on the embedded miniredis for the scenarios whose scripts read the store's
// clock there with TIME (a real server is sent it): the INCR-then-EXPIRE pair of
// cluster-nonatomic, and cluster-skew by the store's clock. gopher-lua runs about 3000
// calls a second, slower still under the race detector, so with a twentieth of
// cluster-nonatomic's traffic, and of cluster-skew the widest skew on each clock for
// three algorithms with a third of its traffic (still over the limit). The other
// scenarios' scripts are held to the model on miniredis by store's conformance tests.
func TestBuiltinClustersOnMiniredis(t *testing.T) {
	t.Parallel()
	traffic := regexp.MustCompile(`(count|rate): (\d+)`)
	narrower := regexp.MustCompile(`(?m)^    - \{name: \w+-[0-3][.0-9]*s, .*\n`)
	names, files := clusterFiles(t, func(name, text string) string {
		part := 20
		if name == "cluster-skew" {
			text, part = narrower.ReplaceAllString(text, ""), 3
			text = regexp.MustCompile(`(?m)^algorithms: .*$`).ReplaceAllString(text, "algorithms: [fixed-window, sliding-log, token-bucket]")
		}
		text = traffic.ReplaceAllStringFunc(text, func(m string) string {
			kv := strings.SplitN(m, ": ", 2)
			n, _ := strconv.Atoi(kv[1])
			return fmt.Sprintf("%s: %d", kv[0], max(n/part, 1))
		})
		return strings.Replace(text, "\ncluster:\n", "\ncluster:\n  store: miniredis\n", 1)
	})
	for _, name := range names {
		if name != "cluster-nonatomic" && name != "cluster-skew" {
			continue
		}
		modelFile := strings.TrimSuffix(files[name], ".yaml") + "-model.yaml"
		text, _ := os.ReadFile(files[name])
		os.WriteFile(modelFile, []byte(strings.Replace(string(text), "  store: miniredis\n", "", 1)), 0o644)
		want, _, _ := rlsim(t, "run", modelFile, "--format", "json")
		// Pipelines of 16: under the race detector on a busy machine gopher-lua can take
		// longer than the store's 2 s timeout over 256 calls.
		got, errOut, code := rlsim(t, "run", files[name], "--format", "json", "--pipeline", "16")
		if code != 0 {
			t.Fatalf("%s on miniredis: exit %d: %s", name, code, errOut)
		}
		if !strings.Contains(got, `"store": "miniredis"`) {
			t.Fatalf("%s did not run on miniredis", name)
		}
		if got = strings.ReplaceAll(got, `"store": "miniredis"`, `"store": "model"`); got != want {
			t.Errorf("%s on miniredis differs from the model:\n%s", name, firstDiff(want, got))
		}
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
	addr := testnet.RefusedAddr(t)
	data, _ := os.ReadFile("../scenarios/cluster-shared.yaml")
	text := strings.Replace(string(data), "  placement: shared\n", "  placement: shared\n  store: redis\n  redis_url: redis://"+addr+"\n", 1)
	file := filepath.Join(t.TempDir(), "down.yaml")
	os.WriteFile(file, []byte(text), 0o644)
	start := time.Now()
	out, errOut, code := rlsim(t, "run", file)
	if code != 1 || out != "" || !strings.Contains(errOut, "cluster.redis_url: store unavailable") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if d := time.Since(start); d > 2*store.DefaultTimeout {
		t.Fatalf("took %s", d)
	}
}
