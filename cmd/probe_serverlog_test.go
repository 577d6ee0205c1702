package cmd

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/probe"
)

// serverLogTraffic is the short traffic probed with --server-log: three keys over 3 s.
const serverLogTraffic = "testdata/probe-serverlog.yaml"

// renamedServerLogScenario is serverLogTraffic with its keys prefixed, so that runs
// against the same nginx never share a key's state.
func renamedServerLogScenario(t *testing.T, prefix string) string {
	t.Helper()
	data, err := os.ReadFile(serverLogTraffic)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, k := range []string{"burst", "stream", "double"} {
		text = strings.ReplaceAll(text, "key: "+k+"}", "key: "+prefix+k+"}")
	}
	if n := strings.Count(text, prefix); n != 4 {
		t.Fatalf("%s: renamed %d keys, want the 4 lines the file has", serverLogTraffic, n)
	}
	path := filepath.Join(t.TempDir(), "probe-serverlog.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProbeServerLogOnNginx probes the nginx of .ci/run at /tag/ (limit_req rate=10r/s
// burst=20, keyed by X-User, logging `$msec $request_time $status $http_x_rlsim_probe` to
// RLSIM_NGINX_ACCESS_LOG) with --model its configuration and --server-log its log: every
// request must be found in the log, the model must agree on 99.5% of the decisions or
// more judged on nginx's own arrival times, and `rlsim identify` on the decisions file
// with the same log must name the configuration.
func TestProbeServerLogOnNginx(t *testing.T) {
	base, accessLog := os.Getenv("RLSIM_NGINX_URL"), os.Getenv("RLSIM_NGINX_ACCESS_LOG")
	if base == "" || accessLog == "" {
		t.Skip("RLSIM_NGINX_URL and RLSIM_NGINX_ACCESS_LOG not set (.ci/run starts nginx and sets them)")
	}
	t.Parallel()
	prefix := fmt.Sprintf("%012x-", rand.Uint64()>>16)
	decisions := filepath.Join(t.TempDir(), "decisions.csv")
	const spec = "nginx:rate=10r/s burst=20"
	out, errOut, code := rlsim(t, "probe", strings.TrimSuffix(base, "/")+"/tag/", "--format", "json", "--scenario", renamedServerLogScenario(t, prefix),
		"--key-header", "X-User", "--model", spec, "--server-log", accessLog, "--decisions", decisions)
	var rep probe.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Results) != 1 {
		t.Fatalf("probe: exit %d: %s%s", code, errOut, out)
	}
	r := rep.Results[0]
	m := r.ServerLog
	if m == nil || r.ModelAgreement == nil || r.Other != 0 {
		t.Fatalf("%+v", r)
	}
	t.Logf("%s", m)
	t.Logf("--model %s on nginx's arrivals: %.2f%% of %d decisions, %d within jitter (±%.2f ms), %d real differences; sent up to %.1f ms late",
		spec, 100**r.ModelAgreement, r.Requests, *r.ModelWithinJitter, r.Promise.JitterMS, *r.ModelDifferences, r.LateMSMax)
	if m.Matched != int(r.Requests) || len(m.Missing) != 0 || !strings.Contains(errOut, "rlsim probe: --server-log: ") {
		t.Errorf("found %d of %d requests in %s, missing %v; stderr %q", m.Matched, r.Requests, accessLog, m.Missing, errOut)
	}
	if *r.ModelAgreement < 0.995 {
		t.Errorf("--model %s agrees on %.2f%% on nginx's arrivals, want 99.5%% or more: %+v", spec, 100**r.ModelAgreement, r.ModelDiffering)
	}
	if r.Promise.JitterMS != 1 {
		t.Errorf("jitter %.2f ms on the server's times, want the 1 ms of its clock", r.Promise.JitterMS)
	}

	out, errOut, code = rlsim(t, "identify", decisions, "--format", "json", "--best", "3", "--server-log", accessLog)
	var found identifyReport
	if code != 0 || json.Unmarshal([]byte(out), &found) != nil {
		t.Fatalf("identify: exit %d: %s%s", code, errOut, out)
	}
	best := found.Identified[0]
	t.Logf("identify on nginx's arrivals: %s, %d + %d within jitter of %d", best.Model, best.Agreed, best.WithinJitter, best.Decisions)
	if best.Model != spec || best.Agreement < 0.995 || found.ServerLog == nil || found.ServerLog.Matched != int(r.Requests) {
		t.Errorf("identify names %s (%.2f%% of %d), found %+v; want %s", best.Model, 100*best.Agreement, best.Decisions, found.ServerLog, spec)
	}
}

// TestServerLogFlags: --server-log's mistakes are bad command lines (exit 2) named by the
// flag, before anything is sent; identify needs a decisions file whose requests were
// tagged, and refuses --server-log on a log.
func TestServerLogFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	log := write("access.log", "")
	header := strings.Join(probe.DecisionColumns, ",") + "\n"
	untagged := write("untagged.csv", header+"1,a,5,6,200,true,,,\n2,a,7,9,429,false,,,\n")
	tagged := write("tagged.csv", header+"1,a,5,6,200,true,,,r1-1\n2,b,7,9,429,false,,,r1-2\n3,a,8,9,429,false,,,r1-3\n")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"probe", "http://127.0.0.1:9/", "--scenario", serverLogTraffic, "--key-header", "X-User", "--server-log", filepath.Join(dir, "absent.log")}, 2, "--server-log " + filepath.Join(dir, "absent.log")},
		{[]string{"probe", "http://127.0.0.1:9/", "--scenario", serverLogTraffic, "--key-header", "X-User", "--server-log", log, "--server-log-format", "$msec $status"}, 2, "has no $request_time"},
		{[]string{"probe", "http://127.0.0.1:9/", "--scenario", serverLogTraffic, "--key-header", "X-User", "--server-log", log, "--server-log-format", "envoy"}, 2, "--server-log " + log + ": \"envoy\": want nginx"},
		{[]string{"identify", untagged, "--server-log", log}, 1, "untagged.csv: seq 1 has no tag"},
		{[]string{"identify", untagged, "--server-log", log, "--nginx-log-format", "$msec"}, 2, "--server-log: reads the server's log of a probe's decisions file"},
		{[]string{"identify", tagged, "--server-log", log}, 1, "none of the 3 requests is in the log"},
		{[]string{"identify", tagged, "--server-log", write("bad.log", "1767261600.101 0.001 200 r1-1\nnot a line\n")}, 1, "bad.log:2: "},
	} {
		out, errOut, code := rlsim(t, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%v: exit %d, %q, stdout %q; want exit %d and %q", tt.args, code, errOut, out, tt.code, tt.want)
		}
	}
	// Two keys judged on the log's times, one request missing from it: found, counted and
	// named in the JSON.
	good := write("good.log", "1767261600.101 0.001 200 r1-1\n1767261600.102 0.000 429 -\n1767261600.300 0.002 429 r1-3\n")
	out, errOut, code := rlsim(t, "identify", tagged, "--format", "json", "--server-log", good)
	var rep identifyReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.ServerLog == nil {
		t.Fatalf("identify: exit %d: %s%s", code, errOut, out)
	}
	if m := rep.ServerLog; m.Matched != 2 || m.Lines != 3 || m.Other != 1 || len(m.Missing) != 1 || m.Missing[0].Seq != 2 || m.Missing[0].Key != "b" {
		t.Errorf("%+v", m)
	}
	if out, errOut, code := rlsim(t, "identify", tagged, "--server-log", good); code != 0 ||
		!strings.Contains(out, "Arrivals from the server's log good.log (nginx): 2 of 3 requests found,") || !strings.Contains(out, "Missing, judged at their send time") ||
		!strings.Contains(out, "seq 2 (key b, tag r1-2)") {
		t.Errorf("identify: exit %d: %s%s", code, errOut, out)
	}
}
