package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/probe"
	"github.com/rlsim/rlsim/scenario"
)

func identifyJSON(t *testing.T, args ...string) identifyReport {
	t.Helper()
	out, errOut, code := rlsim(t, append([]string{"identify", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("identify %v: exit %d: %s", args, code, errOut)
	}
	var rep identifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return rep
}

// TestIdentifyReadsAProbesDecisions: the decisions files of probes of the real nginx
// (/bn/: rate=10r/s burst=20 nodelay) and HAProxy (/gt20-10s/) that .ci/run starts, kept
// in testdata, are named for what they are, every decision reproduced within the jitter
// the probe measured.
func TestIdentifyReadsAProbesDecisions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ file, want string }{
		{"probe-decisions-nginx-bn.csv", "nginx:rate=10r/s burst=20 nodelay"},
		{"probe-decisions-haproxy-gt20.csv", "haproxy:period=10s gt=20"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			rep := identifyJSON(t, filepath.Join("testdata", tt.file))
			best := rep.Identified[0]
			if best.Model != tt.want || best.Agreement != 1 || rep.Decisions != 963 || rep.Keys != 7 || len(rep.Identified) != identifyBest {
				t.Fatalf("%+v", rep)
			}
			out, _, code := rlsim(t, "identify", filepath.Join("testdata", tt.file), "--format", "csv", "--best", "2")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], "1,"+tt.want+",") {
				t.Fatalf("csv: %q", out)
			}
			out, _, _ = rlsim(t, "identify", filepath.Join("testdata", tt.file))
			if !strings.HasPrefix(out, "behaves like "+tt.want+" — 963 of 963 decisions\n") {
				t.Fatalf("text: %s", out)
			}
		})
	}
}

// nginxLogOf writes the nginx log (`$msec $request_time $limit_req_status $status $uri
// $http_x_user`) of the identification traffic decided by spec, nginx's log order
// being the order requests completed, and returns its path.
func nginxLogOf(t *testing.T, spec string) string {
	t.Helper()
	sc, err := scenario.Load(identifyTraffic)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := probe.FromScenario(sc, sc.SeedOr(scenario.DefaultSeed), 1, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := algorithms.New(spec, algorithms.Policy{Limit: 1, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{}
	base := time.Unix(1_767_261_600, 123_456_789).UnixNano()
	var b strings.Builder
	for _, r := range plan.Requests {
		id, ok := ids[r.Key]
		if !ok {
			id = uint32(len(ids))
			ids[r.Key] = id
		}
		at := base + int64(r.At)
		d := lim.Allow(id, at, 1)
		status, limit := 200, "PASSED"
		switch {
		case !d.Allowed:
			status, limit = 429, "REJECTED"
		case d.Delay > 0:
			limit = "DELAYED"
		}
		// nginx logs milliseconds: the end is the arrival's millisecond plus the time held.
		startMS := at / int64(time.Millisecond)
		held := d.Delay.Milliseconds()
		fmt.Fprintf(&b, "%d.%03d %d.%03d %s %d /x/ %s\n", (startMS+held)/1000, (startMS+held)%1000, held/1000, held%1000, limit, status, r.Key)
	}
	path := filepath.Join(t.TempDir(), "limits.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIdentifyReadsAnNginxLog: nginx's own log of its decisions, read with the traffic
// package's nginx log_format, names the zone's configuration, for several of them.
func TestIdentifyReadsAnNginxLog(t *testing.T) {
	t.Parallel()
	format := "$msec $request_time $limit_req_status $status $uri $http_x_user"
	for _, spec := range []string{"nginx:rate=10r/s burst=20 nodelay", "nginx:rate=5r/s burst=8 nodelay", "nginx:rate=2r/s burst=4 nodelay"} {
		t.Run(spec, func(t *testing.T) {
			rep := identifyJSON(t, nginxLogOf(t, spec), "--nginx-log-format", format, "--key-var", "http_x_user")
			if best := rep.Identified[0]; best.Model != spec || best.Agreement != 1 || rep.Decisions != 963 || rep.Keys != 7 {
				t.Fatalf("%+v", rep)
			}
		})
	}
}

func TestIdentifyRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	header := strings.Join(probe.DecisionColumns, ",") + "\n"
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{write("cols.csv", "seq,key\n1,a\n")}, 1, "cols.csv:1: no column sent_ns"},
		{[]string{write("sent.csv", header+"1,a,5,6,200,true,,\n2,a,x,6,200,true,,\n")}, 1, "sent.csv:3:5: sent_ns \"x\""},
		{[]string{write("allowed.csv", header+"1,a,5,6,200,maybe,,\n")}, 1, "allowed.csv:2:13: allowed \"maybe\""},
		{[]string{write("back.csv", header+"1,a,9,6,200,true,,\n")}, 1, "back.csv:2:7: answered_ns \"6\": want no earlier than sent_ns"},
		{[]string{write("empty.csv", header)}, 1, "empty.csv: no decisions"},
		{[]string{write("all.csv", header+"1,a,5,6,200,true,,\n2,a,7,8,200,true,,\n")}, 1, "the endpoint refused nothing"},
		{[]string{filepath.Join(dir, "missing.csv")}, 1, "no such file"},
		{[]string{write("x.csv", header), "--best", "0"}, 2, "--best: must be at least 1"},
		{[]string{write("log", "1.000 0.000 PASSED 200 /x/ a\n"), "--nginx-log-format", "$msec $limit_req_status $status $uri $http_x_user"}, 2, "--nginx-log-format: --field user=remote_addr: the log_format has no $remote_addr"},
		{[]string{write("status.log", "1.000 0.000 MAYBE 200 /x/ a\n"), "--key-var", "http_x_user",
			"--nginx-log-format", "$msec $request_time $limit_req_status $status $uri $http_x_user"}, 1, "status.log:1: $limit_req_status \"MAYBE\""},
	} {
		out, errOut, code := rlsim(t, append([]string{"identify"}, tt.args...)...)
		if code != tt.code || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("identify %v: exit %d, %q, stdout %q; want exit %d and %q", tt.args, code, errOut, out, tt.code, tt.want)
		}
	}
}
