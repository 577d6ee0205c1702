package cmd

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// boundaryLog writes the boundary-burst scenario as a combined-format access log: 100
// requests by user_8812 at 10:00:59.900 and 100 at 10:01:00.100, with broken lines
// inserted after the given line numbers.
func boundaryLog(brokenAfter ...int) string {
	var b strings.Builder
	n := 0
	write := func(line string) {
		b.WriteString(line + "\n")
		n++
		for _, at := range brokenAfter {
			if n == at {
				b.WriteString(`this is not a log line` + "\n")
			}
		}
	}
	for _, ts := range []string{"01/Jan/2026:10:00:59.900 +0000", "01/Jan/2026:10:01:00.100 +0000"} {
		for i := range 100 {
			write(fmt.Sprintf(`203.0.113.%d - user_8812 [%s] "GET /api/items?page=%d HTTP/1.1" 200 %d "-" "rlsim-testdata/1.0" "-"`, 7+i%3, ts, i, 512+i))
		}
	}
	return b.String()
}

// runJSON runs a command with --format json and decodes its one report.
func runJSON(t *testing.T, args ...string) jsonReport {
	t.Helper()
	out, errOut, code := rlsim(t, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	return r
}

func TestReplayLogIsTheGeneratedOne(t *testing.T) {
	golden(t, "boundary.log", boundaryLog())
}

func TestReplayMatchesTheScriptedScenario(t *testing.T) {
	results := func(args ...string) []any {
		out, errOut, code := rlsim(t, append(args, "--format", "json")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var r struct{ Results []any }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Results
	}
	scripted := results("compare", "--scenario", "boundary-burst")
	replayed := results("replay", filepath.Join("testdata", "boundary.log"), "--key", "user", "--limit", "100", "--window", "1m")
	if len(scripted) != 6 || len(replayed) != len(scripted) {
		t.Fatalf("%d results scripted, %d replayed", len(scripted), len(replayed))
	}
	for i := range scripted {
		sj, _ := json.Marshal(scripted[i])
		rj, _ := json.Marshal(replayed[i])
		if string(sj) != string(rj) {
			t.Errorf("result %d differs:\nscripted %s\nreplayed %s", i, sj, rj)
		}
	}
	fixed := runJSON(t, "replay", filepath.Join("testdata", "boundary.log"), "--key", "user", "--algorithms", "fixed-window")
	if fixed.Results[0].Admitted != 200 || fixed.Results[0].OverAdmission != 2 {
		t.Fatalf("the fixed window should admit all 200 at the boundary, got %+v", fixed.Results[0])
	}
}

func TestReplayNamesBrokenLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.log")
	if err := os.WriteFile(path, []byte(boundaryLog(3, 50, 150)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := rlsim(t, "replay", path, "--key", "user", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, line := range []string{"line 4:", "line 52:", "line 153:"} {
		if !strings.Contains(errOut, line) {
			t.Errorf("stderr does not name %s:\n%s", line, errOut)
		}
	}
	if !strings.Contains(errOut, "3 of 203 lines were not replayed (3 unreadable") {
		t.Errorf("stderr does not count the broken lines:\n%s", errOut)
	}
	var rep struct {
		UnreadLines int      `json:"unread_lines"`
		Problems    []string `json:"unread_line_problems"`
		Results     []struct {
			Requests int64 `json:"requests"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.UnreadLines != 3 || len(rep.Problems) != 3 || !strings.HasPrefix(rep.Problems[0], "line 4: ") || rep.Results[0].Requests != 200 {
		t.Fatalf("report: %d unread %q, %d requests", rep.UnreadLines, rep.Problems, rep.Results[0].Requests)
	}
}

func TestReplayRefusesAMostlyGarbageFile(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.log")
	os.WriteFile(garbage, []byte("a\nb\nc\n"+strings.SplitN(boundaryLog(), "\n", 2)[0]+"\n"), 0o644)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"replay", garbage}, 1, "3 of 4 lines could not be read as combined"},
		{[]string{"replay", filepath.Join(dir, "missing.log")}, 1, "no such file"},
		{[]string{"replay", garbage, "--log-format", "xml"}, 2, `--log-format: unknown log format "xml"`},
		{[]string{"replay", garbage, "--key", "xff:0"}, 2, "--key:"},
		{[]string{"replay", garbage, "--time-scale", "0"}, 2, "--time-scale:"},
	} {
		out, errOut, code := rlsim(t, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", tt.args, code, errOut, out, tt.code, tt.want)
		}
	}
}

func TestReplayReadsJSONLinesAndCSV(t *testing.T) {
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "a.jsonl")
	csvFile := filepath.Join(dir, "a.csv")
	var j, c strings.Builder
	c.WriteString("time,ip,user,route,cost,label\n")
	for i := range 30 {
		ts := fmt.Sprintf("2026-01-01T10:00:%02d.5Z", i)
		fmt.Fprintf(&j, `{"time": %q, "ip": "198.51.100.1", "user": "u1", "route": "GET /x", "cost": 2, "label": "attacker"}`+"\n", ts)
		fmt.Fprintf(&c, "%s,198.51.100.1,u1,GET /x,2,attacker\n", ts)
	}
	os.WriteFile(jsonl, []byte(j.String()), 0o644)
	os.WriteFile(csvFile, []byte(c.String()), 0o644)
	a := runJSON(t, "replay", jsonl, "--limit", "20", "--algorithms", "sliding-log")
	b := runJSON(t, "replay", csvFile, "--limit", "20", "--algorithms", "sliding-log")
	// 30 requests of cost 2 within 30 s against 20 units a minute: 10 admitted.
	for _, r := range []jsonReport{a, b} {
		x := r.Results[0]
		if x.Requests != 30 || x.Admitted != 10 || x.AttackerAdmitRate == nil || *x.AttackerAdmitRate != 10.0/30 {
			t.Fatalf("%+v", x)
		}
	}
}

func TestReplayTimeScaleMovesTheBoundaryBurstIntoOneWindow(t *testing.T) {
	log := filepath.Join("testdata", "boundary.log")
	normal := runJSON(t, "replay", log, "--key", "user", "--algorithms", "fixed-window")
	// Scaled by 1/1000 the two bursts land 59.9 ms and 60.1 ms after 10:00, inside one
	// fixed minute: the window that admitted 200 now admits 100.
	squeezed := runJSON(t, "replay", log, "--key", "user", "--algorithms", "fixed-window", "--time-scale", "0.001")
	if normal.Results[0].Admitted != 200 || squeezed.Results[0].Admitted != 100 {
		t.Fatalf("admitted %d at scale 1 and %d at 0.001, want 200 and 100", normal.Results[0].Admitted, squeezed.Results[0].Admitted)
	}
}

// TestReplayWritesItsResultsFolder: replay writes the results folder compare writes, named
// after the log, with the replay command that makes it again; --out "" writes none, and a
// bad --charts is refused before anything is read or written.
func TestReplayWritesItsResultsFolder(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, []byte(boundaryLog()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	stdout, errOut, code := rlsim(t, "replay", log, "--key", "user", "--time-scale", "0.5", "--out", out, "--charts", "svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, f := range []string{"index.html", "access/results.json", "access/results.csv", "access/timeline.csv", "access/summary.md", "access/window-timeline.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(out, "access", "summary.md"))
	want := "`rlsim replay " + log + " --log-format combined --key user --limit 100 --window 1m0s --time-scale 0.5 --seed 1`"
	if !strings.Contains(string(summary), want) {
		t.Errorf("summary.md does not say how to reproduce it with %s:\n%s", want, summary)
	}
	results, _ := os.ReadFile(filepath.Join(out, "access", "results.json"))
	var r jsonReport
	if err := json.Unmarshal(results, &r); err != nil || len(r.Results) != 6 || r.Results[0].Requests != 200 {
		t.Errorf("results.json: %v %+v", err, r)
	}
	if !strings.Contains(stdout, "fixed-window") {
		t.Errorf("no table on stdout:\n%s", stdout)
	}

	empty := t.TempDir()
	t.Chdir(empty)
	if _, errOut, code := rlsim(t, "replay", log, "--out", ""); code != 0 {
		t.Fatalf("--out \"\": exit %d: %s", code, errOut)
	}
	if _, errOut, code := rlsim(t, "replay", log, "--charts", "gif"); code != 2 || !strings.Contains(errOut, `--charts: unknown chart format "gif"`) {
		t.Errorf("--charts gif: exit %d, %q", code, errOut)
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("files written: %v", left)
	}
}

// A log whose times the virtual clock cannot run — more than 292 years from its first
// line to its last, or made so by --time-scale — and a --window that pushes a run past
// the years the clock counts are one error each, exit 1, nothing on stdout.
func TestReplayAndWindowBeyondTheClock(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, times ...string) string {
		var b strings.Builder
		for _, ts := range times {
			fmt.Fprintf(&b, `{"time": %q, "user": "u1"}`+"\n", ts)
		}
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(b.String()), 0o644)
		return path
	}
	wide := write("wide.jsonl", "1700-01-01T00:00:00Z", "2000-01-01T00:00:00Z")
	century := write("century.jsonl", "1900-01-01T00:00:00Z", "2000-01-01T00:00:00Z")
	early := filepath.Join(dir, "early.yaml")
	os.WriteFile(early, []byte("epoch: 1678-01-01T01:00:00Z\npolicy: {limit: 5, window: 1m}\ntraffic:\n  - script:\n      - {at: 1s, key: u}\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", wide, "--log-format", "jsonl"}, "lines 1 to 2: 1700-01-01T00:00:00Z to 2000-01-01T00:00:00Z is more than the 2562047h47m16.854775807s the virtual clock runs"},
		{[]string{"replay", century, "--log-format", "jsonl", "--time-scale", "3"}, "lines 1 to 2 at a time scale of 3: 876576h0m0s is more than the virtual clock runs"},
		{[]string{"compare", "--scenario", early, "--window", "1h"}, "scenario early with a window of 1h0m0s: starting at 1678-01-01T01:00:00Z, 5 windows of 1h0m0s before it fall before 1678"},
	} {
		out, errOut, code := rlsim(t, tt.args...)
		if code != 1 || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 1 and %q", tt.args, code, errOut, out, tt.want)
		}
	}
	if _, errOut, code := rlsim(t, "replay", century, "--log-format", "jsonl"); code != 0 {
		t.Errorf("a century of log: exit %d: %s", code, errOut)
	}
	if _, errOut, code := rlsim(t, "compare", "--scenario", early, "--window", "10m"); code != 0 {
		t.Errorf("--window 10m from 01:00: exit %d: %s", code, errOut)
	}
}

// replayClient is one of the two clients the keying tests' logs hold, with an identity of
// every kind.
type replayClient struct{ ip, ip6, xff, user, account, tenant, apiKey, path, ua string }

var replayClients = [2]replayClient{
	{"203.0.113.7", "2001:db8:0:1::7", "198.51.100.1, 192.0.2.10", "alice", "acct-a", "tenant-a", "key-a", "/a", "ua-alice"},
	{"203.0.113.8", "2001:db8:0:2::7", "198.51.100.2, 192.0.2.11", "bob", "acct-b", "tenant-b", "key-b", "/b", "ua-bob"},
}

// replayLogFormat writes the keying tests' four lines (alice, bob, alice, bob, a second
// apart from 10:00:01) in one format, with the flags that read it.
type replayLogFormat struct {
	name string
	ext  string
	args []string
	line func(c replayClient, ip string, sec int) string
	head string   // a header line
	keys []string // the keys the format carries
}

var replayLogFormats = []replayLogFormat{
	{name: "jsonl", ext: ".jsonl", line: func(c replayClient, ip string, sec int) string {
		return fmt.Sprintf(`{"time":"2026-01-01T10:00:%02dZ","ip":%q,"xff":%q,"user":%q,"account":%q,"tenant":%q,"api_key":%q,"method":"GET","path":%q,"http_x_api_key":%q}`,
			sec, ip, c.xff, c.user, c.account, c.tenant, c.apiKey, c.path, c.apiKey)
	}, keys: []string{"user", "account", "tenant", "api-key", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost", "header:X-Api-Key"}},
	{name: "jsonl --field", ext: ".jsonl", args: []string{"--log-format", "jsonl", "--field", "time=ts", "--field", "ip=client", "--field", "user=uid",
		"--field", "xff=forwarded", "--field", "tenant=org", "--field", "route=endpoint", "--field", "header:X-Api-Key=token"},
		line: func(c replayClient, ip string, sec int) string {
			return fmt.Sprintf(`{"ts":%d,"client":%q,"forwarded":%q,"uid":%q,"org":%q,"endpoint":"GET %s","token":%q,"status":200,"bytes":512}`,
				1767261600+sec, ip, c.xff, c.user, c.tenant, c.path, c.apiKey)
		}, keys: []string{"user", "account", "tenant", "route", "ip", "ipv6/64", "xff:1", "header:x-api-key"}},
	{name: "csv", ext: ".csv", head: "time,ip,xff,user,account,tenant,api_key,method,path,http_x_api_key", line: func(c replayClient, ip string, sec int) string {
		return fmt.Sprintf("2026-01-01T10:00:%02dZ,%s,\"%s\",%s,%s,%s,%s,GET,%s,%s", sec, ip, c.xff, c.user, c.account, c.tenant, c.apiKey, c.path, c.apiKey)
	}, keys: []string{"user", "account", "tenant", "api-key", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost", "header:x-api-key"}},
	{name: "csv --field", ext: ".csv", args: []string{"--field", "user=login", "--field", "time=when"}, head: "when,ip,login,status",
		line: func(c replayClient, ip string, sec int) string {
			return fmt.Sprintf("2026-01-01T10:00:%02dZ,%s,%s,200", sec, ip, c.user)
		}, keys: []string{"user", "account", "ip"}},
	{name: "combined", ext: ".log", line: func(c replayClient, ip string, sec int) string {
		return fmt.Sprintf(`%s - %s [01/Jan/2026:10:00:%02d +0000] "GET %s?x=1 HTTP/1.1" 200 10 "-" "%s" "%s"`, ip, c.user, sec, c.path, c.ua, c.xff)
	}, keys: []string{"user", "account", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost", "header:user-agent"}},
	{name: "nginx", ext: ".log",
		args: []string{"--nginx-log-format", `$remote_addr - $remote_user [$time_local] "$request" $status $msec $request_time "$http_x_forwarded_for" "$http_x_api_key" $tenant`},
		line: func(c replayClient, ip string, sec int) string {
			return fmt.Sprintf(`%s - %s [01/Jan/2026:10:00:%02d +0000] "GET %s?x=1 HTTP/1.1" 200 %d.250 0.125 "%s" "%s" %s`, ip, c.user, sec, c.path, 1767261600+sec, c.xff, c.apiKey, c.tenant)
		}, keys: []string{"user", "account", "tenant", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost", "header:x-api-key"}},
	{name: "alb", ext: ".log", args: []string{"--log-format", "alb"}, line: func(c replayClient, ip string, sec int) string {
		if strings.Contains(ip, ":") {
			ip = "[" + ip + "]"
		}
		return fmt.Sprintf(`https 2026-01-01T10:00:%02d.100000Z app/lb/1 %s:2817 10.0.0.1:80 0.001 0.010 0.000 200 200 34 366 "GET https://h:443%s?x=1 HTTP/1.1" "%s" - - arn "Root=1" "-" "-" 1 2026-01-01T10:00:%02d.000100Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-"`,
			sec, ip, c.path, c.ua, sec)
	}, keys: []string{"route", "ip", "ipv6/64", "header:user-agent"}},
	{name: "envoy (istio)", ext: ".log", args: []string{"--log-format", "envoy"}, line: func(c replayClient, ip string, sec int) string {
		if strings.Contains(ip, ":") {
			ip = "[" + ip + "]"
		}
		return fmt.Sprintf(`[2026-01-01T10:00:%02d.500Z] "GET %s?x=1 HTTP/1.1" 200 - via_upstream - "-" 0 5 3 2 "%s" "%s" "id" "host" "10.0.0.2:80" out 10.0.0.3:4 10.0.0.4:80 %s:5555 - default`,
			sec, c.path, c.xff, c.ua, ip)
	}, keys: []string{"route", "ip", "ipv6/64", "xff:1", "xff-leftmost", "header:user-agent"}},
	{name: "haproxy", ext: ".log", args: []string{"--log-format", "haproxy", "--field", "user=capture:1", "--field", "xff=capture:2", "--field", "header:x-api-key=capture:3"},
		line: func(c replayClient, ip string, sec int) string {
			return fmt.Sprintf(`Jan  1 10:00:%02d lb haproxy[1]: %s:33317 [01/Jan/2026:10:00:%02d.905] fe be/s1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {%s|%s|%s} {} "GET %s?x HTTP/1.1"`,
				sec, ip, sec, c.user, c.xff, c.apiKey, c.path)
		}, keys: []string{"user", "account", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost", "header:x-api-key"}},
	{name: "caddy", ext: ".json", args: []string{"--log-format", "caddy"}, line: func(c replayClient, ip string, sec int) string {
		return fmt.Sprintf(`{"ts":%d.5,"logger":"http.log.access","request":{"remote_ip":%q,"method":"GET","uri":"%s?x=1","headers":{"User-Agent":[%q],"X-Forwarded-For":[%q],"X-Api-Key":[%q]}},"user_id":%q,"duration":0.0041}`,
			1767261600+sec, ip, c.path, c.ua, c.xff, c.apiKey, c.user)
	}, keys: []string{"user", "account", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost", "header:x-api-key", "header:user-agent"}},
}

// write writes the four lines to a file in dir, the clients' addresses IPv6 when ipv6.
func (f replayLogFormat) write(t *testing.T, dir, key string, ipv6 bool) string {
	t.Helper()
	var b strings.Builder
	if f.head != "" {
		b.WriteString(f.head + "\n")
	}
	for i := range 4 {
		c := replayClients[i%2]
		ip := c.ip
		if ipv6 {
			ip = c.ip6
		}
		b.WriteString(f.line(c, ip, i+1) + "\n")
	}
	file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_", " ", "_", "(", "", ")", "").Replace(f.name+"-"+key)+f.ext)
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestReplayKeysEveryIdentityInEveryFormat replays, for every key rlsim knows and every
// log format that carries it (its own fields, or columns mapped with --field), four lines
// from two clients (two each) at a limit of one a minute: each client gets its first
// request through, so every algorithm admits 2, and the decisions file names both
// clients. A replay that put every line on one key (or on none) admits 1.
func TestReplayKeysEveryIdentityInEveryFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range replayLogFormats {
		for _, key := range f.keys {
			t.Run(f.name+"/"+key, func(t *testing.T) {
				file := f.write(t, dir, key, key == "ipv6/64")
				decisions := file + ".decisions.csv"
				args := append([]string{"replay", file, "--key", key, "--limit", "1", "--window", "1m", "--decisions", decisions, "--out", ""}, f.args...)
				r := runJSON(t, args...)
				for _, x := range r.Results {
					if x.Requests != 4 || x.Admitted != 2 {
						t.Errorf("%s: %d requests, %d admitted; want 4 and 2 (one per client)", x.Algorithm, x.Requests, x.Admitted)
					}
				}
				data, err := os.ReadFile(decisions)
				if err != nil {
					t.Fatal(err)
				}
				keys := map[string]bool{}
				for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
					keys[strings.Split(line, ",")[1]] = true
				}
				if len(keys) != 2 || keys[""] || keys["(unkeyed)"] {
					t.Errorf("decisions name keys %v, want the two clients'", keys)
				}
			})
		}
	}
}

// Layered keys read the log's identities too: five logins a minute per account under a
// limit of one a minute per user admit one per client, and the refusals name the layer.
func TestReplayLayersKeyOnTheLogsIdentities(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range replayLogFormats[:5] {
		t.Run(f.name, func(t *testing.T) {
			file := f.write(t, dir, "layers", false)
			args := append([]string{"replay", file, "--layer", "ip:10/1m", "--layer", "per-user=user:1/1m", "--out", "", "--algorithms", "sliding-log"}, f.args...)
			out, errOut, code := rlsim(t, append(args, "--format", "json")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var r struct {
				Key     string
				Results []struct {
					Requests, Admitted int64
					Layers             []struct {
						Layer   string
						Refused int64
					} `json:"refusals_by_layer"`
				}
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			x := r.Results[0]
			if r.Key != "ip=ip+per-user=user" || x.Requests != 4 || x.Admitted != 2 || len(x.Layers) != 2 || x.Layers[1].Refused != 2 || x.Layers[0].Refused != 0 {
				t.Errorf("key %s, %+v", r.Key, x)
			}
		})
	}
	for _, tt := range []struct{ args, want string }{
		{"--layer ip", "want [NAME=]KEY:LIMIT/WINDOW"},
		{"--layer ip:0/1m", "not a whole number of at least 1"},
		{"--layer ip:5/0s", `window "0s"`},
		{"--layer nope:5/1m", `unknown key "nope"`},
		{"--layer ip:5/1m --layer ip:6/1h", "given twice"},
		{"--layer ip:5/1m,burst=x", "burst=N"},
		{"--layer ip:5/1m --key user", "--key and --layer"},
	} {
		_, errOut, code := rlsim(t, append([]string{"replay", "x.log"}, strings.Fields(tt.args)...)...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
}

// rlsimWithStdin runs rlsim with stdin reading in.
func rlsimWithStdin(t *testing.T, in []byte, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append(args, "--charts", "none"), IO{In: bytes.NewReader(in), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

// An nginx log whose log_format has $msec and $request_time replays with its millisecond
// arrivals ($msec − $request_time, the lines written in the order requests completed) and
// decides exactly as the same requests written as JSON lines with those arrivals.
func TestReplayNginxMsecDecidesAsTheSameRequestsInJSONLines(t *testing.T) {
	t.Parallel()
	type req struct {
		arrival  int64 // ms since 10:00:00
		duration int64 // ms
		ip       string
	}
	var reqs []req
	x := uint64(7)
	for i := range 600 {
		x = x*6364136223846793005 + 1442695040888963407
		// Arrivals 5 ms apart on average and never at the same instant, so that the order
		// of the lines cannot break a tie.
		reqs = append(reqs, req{arrival: int64(i)*5 + int64(x>>62), duration: int64(x>>40) % 900, ip: fmt.Sprintf("203.0.113.%d", 1+(x>>33)%4)})
	}
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var jsonl strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&jsonl, `{"time":%q,"ip":%q}`+"\n", base.Add(time.Duration(r.arrival)*time.Millisecond).Format(time.RFC3339Nano), r.ip)
	}
	// nginx writes a line when the request completes: sort by completion.
	byDone := slices.Clone(reqs)
	slices.SortStableFunc(byDone, func(a, b req) int { return int(a.arrival + a.duration - b.arrival - b.duration) })
	var nginx strings.Builder
	for _, r := range byDone {
		done := base.Add(time.Duration(r.arrival+r.duration) * time.Millisecond)
		fmt.Fprintf(&nginx, "%s [%s] \"GET /x HTTP/1.1\" 200 %d.%03d %d.%03d\n", r.ip, done.Format("02/Jan/2006:15:04:05 -0700"),
			done.Unix(), done.Nanosecond()/1e6, r.duration/1000, r.duration%1000)
	}
	dir1, dir2 := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir1, "access.log"), filepath.Join(dir2, "access.log")
	os.WriteFile(a, []byte(jsonl.String()), 0o644)
	os.WriteFile(b, []byte(nginx.String()), 0o644)
	run := func(file string, format ...string) ([]byte, []any) {
		decisions := file + ".csv"
		args := append([]string{"replay", file, "--limit", "5", "--window", "1s", "--decisions", decisions, "--out", "", "--format", "json"}, format...)
		out, errOut, code := rlsim(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var r struct{ Results []any }
		json.Unmarshal([]byte(out), &r)
		d, _ := os.ReadFile(decisions)
		return d, r.Results
	}
	dj, rj := run(a, "--log-format", "jsonl")
	dn, rn := run(b, "--nginx-log-format", `$remote_addr [$time_local] "$request" $status $msec $request_time`)
	// The same format read from an nginx.conf that defines more than one, by name; its
	// pieces joined and requoted as nginx joins them.
	conf := filepath.Join(dir2, "nginx.conf")
	os.WriteFile(conf, []byte("http {\n  log_format main '$remote_addr - $remote_user [$time_local] \"$request\"';\n"+
		"  log_format timed '$remote_addr [$time_local] \"$request\" '\n    '$status $msec $request_time';\n"+
		"  server { access_log /var/log/nginx/access.log timed; }\n}\n"), 0o644)
	if dc, rc := run(b, "--nginx-log-format", "@"+conf+":timed"); !bytes.Equal(dc, dn) || !reflect.DeepEqual(rc, rn) {
		t.Errorf("@nginx.conf:timed decides otherwise than the format given as text (%d and %d bytes)", len(dc), len(dn))
	}
	for ref, want := range map[string]string{
		"@" + conf:            "defines 2 log_formats (main, timed): name one",
		"@" + conf + ":other": "no log_format other (it defines main, timed, and nginx's combined)",
		"@" + filepath.Join(dir2, "missing.conf"): "missing.conf",
	} {
		_, errOut, code := rlsim(t, "replay", b, "--limit", "5", "--window", "1s", "--out", "", "--nginx-log-format", ref)
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("--nginx-log-format %s: exit %d, %q; want an error with %q", ref, code, errOut, want)
		}
	}
	bad := filepath.Join(dir2, "bad.conf")
	os.WriteFile(bad, []byte("http {\n  log_format broken;\n}\n"), 0o644)
	if _, errOut, code := rlsim(t, "replay", b, "--limit", "5", "--nginx-log-format", "@"+bad); code != 2 || !strings.Contains(errOut, "bad.conf:2") {
		t.Errorf("a log_format without a format: exit %d, %q; want 2 naming bad.conf:2", code, errOut)
	}
	if !bytes.Equal(dj, dn) || len(dj) < 600*6*20 {
		t.Errorf("the decisions differ (%d and %d bytes)", len(dj), len(dn))
	}
	if !reflect.DeepEqual(rj, rn) {
		t.Errorf("the results differ:\n%v\n%v", rj, rn)
	}
	// Some request was refused, so the comparison compared something.
	if !bytes.Contains(dn, []byte(",false,")) {
		t.Error("nothing was refused at 5 per second")
	}
}

// Lines that cannot be read and lines too far out of order are counted by reason, named by
// line on stderr and in the report, and the table's first line says so with the span;
// --strict makes the first of them an error naming file:line, with nothing written.
func TestReplayReportsWhatItSkippedAndStrictRefuses(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "mixed.log")
	lines := []string{
		combinedLine("203.0.113.1", "10:00:01"),
		combinedLine("203.0.113.2", "10:00:05"),
		"garbage",
		combinedLine("203.0.113.3", "10:00:20"),
		combinedLine("203.0.113.4", "10:00:02"), // 18 s back: beyond the 10 s window
		combinedLine("203.0.113.5", "10:00:15"), // 5 s back: put in its place
		"",
		combinedLine("203.0.113.6", "10:00:21"),
	}
	os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	out, errOut, code := rlsim(t, "replay", log, "--out", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	want := "mixed.log: 8 lines read, 5 used, 3 skipped (2 unreadable, 1 out of order beyond 10s); 2026-01-01 10:00:01 to 10:00:21 UTC (20s)"
	if first != want {
		t.Errorf("first line:\n%s\nwant\n%s", first, want)
	}
	for _, s := range []string{"line 3: 1 fields", "line 5: 2026-01-01T10:00:02Z is 18s before line 4's 2026-01-01T10:00:20Z", "line 7: blank line", "3 of 8 lines were not replayed"} {
		if !strings.Contains(errOut, s) || !strings.Contains(out+errOut, strings.SplitN(s, ":", 2)[0]) {
			t.Errorf("stderr does not name %q:\n%s", s, errOut)
		}
	}
	if !strings.Contains(out, "requests") || !strings.Contains(out, "refused") {
		t.Errorf("the table has no requests or refused column:\n%s", out)
	}
	r := runJSON(t, "replay", log, "--out", "")
	if r.Log == nil || r.Log.Lines != 8 || r.Log.Used != 5 || r.Log.Unreadable != 2 || r.Log.OutOfOrder != 1 || r.Log.From != "2026-01-01T10:00:01Z" {
		t.Errorf("log section %+v", r.Log)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--strict"}, log + ":3: 1 fields, want at least 7"},
		{[]string{"--strict", "--reorder-window", "1s"}, log + ":3: 1 fields"},
	} {
		outDir := filepath.Join(dir, "out")
		stdout, errOut, code := rlsim(t, append([]string{"replay", log, "--out", outDir, "--decisions", filepath.Join(dir, "d.csv")}, tt.args...)...)
		if code != 1 || !strings.Contains(errOut, tt.want) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 1 and %q", tt.args, code, errOut, stdout, tt.want)
		}
		if _, err := os.Stat(outDir); err == nil {
			t.Errorf("%v: the results folder was written", tt.args)
		}
	}
	fixed := strings.Join(slices.Delete(slices.Clone(lines), 2, 3), "\n")
	os.WriteFile(log, []byte(strings.ReplaceAll(fixed, "\n\n", "\n")+"\n"), 0o644)
	if _, errOut, code := rlsim(t, "replay", log, "--strict", "--out", ""); code != 1 || !strings.Contains(errOut, log+":4: 2026-01-01T10:00:02Z is 18s before line 3's") {
		t.Errorf("strict, a late line: exit %d, %q", code, errOut)
	}
}

func combinedLine(ip, clock string) string {
	return fmt.Sprintf(`%s - - [01/Jan/2026:%s +0000] "GET / HTTP/1.1" 200 1`, ip, clock)
}

// A gzipped log is read as such, from a file or from stdin ("-"), with the results of the
// plain log; a log of whole seconds says how it placed them, and --subsecond uniform
// places them otherwise, the same way for the same seed.
func TestReplayReadsGzipAndStdinAndPlacesWholeSeconds(t *testing.T) {
	var plain bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&plain, "%s\n", combinedLine(fmt.Sprintf("203.0.113.%d", i%7), fmt.Sprintf("10:%02d:%02d", i/600, i/10%60)))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain.Bytes())
	zw.Close()
	dir := t.TempDir()
	plainFile, gzFile := filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.gz")
	os.WriteFile(plainFile, plain.Bytes(), 0o644)
	os.WriteFile(gzFile, gz.Bytes(), 0o644)
	results := func(out string) string {
		var r struct{ Results json.RawMessage }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return string(r.Results)
	}
	args := []string{"--limit", "8", "--window", "10s", "--format", "json", "--out", ""}
	want, errOut, code := rlsim(t, append([]string{"replay", plainFile}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fromGz, _, _ := rlsim(t, append([]string{"replay", gzFile}, args...)...)
	fromStdin, errOut, code := rlsimWithStdin(t, gz.Bytes(), append([]string{"replay", "-"}, args...)...)
	if code != 0 {
		t.Fatalf("stdin: exit %d: %s", code, errOut)
	}
	if results(fromGz) != results(want) || results(fromStdin) != results(want) {
		t.Errorf("gzip or stdin gave other results:\n%s\n%s\n%s", results(want), results(fromGz), results(fromStdin))
	}
	var r jsonReport
	json.Unmarshal([]byte(fromStdin), &r)
	if r.Scenario != "stdin" || r.Log.File != "-" || r.Log.WholeSeconds != 3000 || r.Log.Placement != "start" || !strings.Contains(r.Log.PlacementEffect, "one burst") {
		t.Errorf("stdin's report: %s %+v", r.Scenario, r.Log)
	}
	table, _, _ := rlsim(t, "replay", plainFile, "--out", "")
	if !strings.Contains(table, `3000 lines had whole-second times, placed by the rule "start"`) {
		t.Errorf("the table does not say how it placed whole seconds:\n%s", table)
	}
	u1, _, _ := rlsim(t, append([]string{"replay", plainFile, "--subsecond", "uniform", "--seed", "1"}, args...)...)
	u1again, _, _ := rlsimWithStdin(t, plain.Bytes(), append([]string{"replay", "-", "--subsecond", "uniform", "--seed", "1", "--workers", "1"}, args...)...)
	u2, _, _ := rlsim(t, append([]string{"replay", plainFile, "--subsecond", "uniform", "--seed", "2"}, args...)...)
	if results(u1) == results(want) || results(u1) != results(u1again) || results(u1) == results(u2) {
		t.Errorf("uniform placement: seed 1 %s\nagain %s\nseed 2 %s\nstart %s", results(u1), results(u1again), results(u2), results(want))
	}
}

// shardLog writes a log of 6000 lines from 300 addresses, some refused at 20 a minute,
// for the shard tests.
func shardLog(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for i := range 6000 {
		fmt.Fprintf(&b, "%s\n", combinedLine(fmt.Sprintf("203.0.%d.%d", i%3, (i*7919)%100), fmt.Sprintf("10:%02d:%02d.%03d", i/3000, i/50%60, i%50*20)))
	}
	path := filepath.Join(dir, "access.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// `replay --shard K/4` four times and `merge` give the bytes of one run: the JSON and the
// CSV on stdout, and results.json and results.csv in the results folder; a shard refuses
// what it cannot do, and layers that cannot be split are refused before anything runs.
func TestReplayShardsMergeToTheBytesOfOneRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := shardLog(t, dir)
	args := []string{"--limit", "20", "--window", "1m"}
	var parts []string
	for k := 1; k <= 4; k++ {
		out, errOut, code := rlsim(t, append([]string{"replay", log, "--shard", fmt.Sprintf("%d/4", k), "--out", ""}, args...)...)
		if code != 0 {
			t.Fatalf("shard %d: exit %d: %s", k, code, errOut)
		}
		part := filepath.Join(dir, fmt.Sprintf("part-%d.json", k))
		os.WriteFile(part, []byte(out), 0o644)
		parts = append(parts, part)
	}
	for _, format := range []string{"json", "csv", "table"} {
		whole, errOut, code := rlsim(t, append([]string{"replay", log, "--format", format, "--out", ""}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		merged, errOut, code := rlsim(t, append([]string{"merge", "--format", format, "--out", ""}, parts...)...)
		if code != 0 || merged != whole {
			t.Errorf("%s: merge (exit %d, %s) differs from one run:\n%s\n---\n%s", format, code, errOut, merged, whole)
		}
	}
	wholeOut, mergedOut := filepath.Join(dir, "whole"), filepath.Join(dir, "merged")
	if _, errOut, code := rlsim(t, append([]string{"replay", log, "--out", wholeOut}, args...)...); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := rlsim(t, append([]string{"merge", "--out", mergedOut}, parts[2], parts[0], parts[3], parts[1])...); code != 0 {
		t.Fatal(errOut)
	}
	for _, f := range []string{"results.json", "results.csv", "summary.md"} {
		a, err1 := os.ReadFile(filepath.Join(wholeOut, "access", f))
		b, err2 := os.ReadFile(filepath.Join(mergedOut, "access", f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs (%v, %v):\n%s\n---\n%s", f, err1, err2, b, a)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "5/4"}, "--shard:"},
		{[]string{"--shard", "1/4", "--format", "csv"}, "a shard prints its partial results as JSON"},
		{[]string{"--shard", "1/4", "--out", "x"}, "a shard writes no results folder"},
		{[]string{"--shard", "1/4", "--memory", "--out", ""}, "a shard holds only its own keys"},
		{[]string{"--shard", "1/2", "--layer", "user:5/1m", "--layer", "ip:100/1m"}, "none of which determines the others"},
	} {
		if _, errOut, code := rlsim(t, append([]string{"replay", log}, tt.args...)...); code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	if _, errOut, code := rlsim(t, "merge", parts[0], parts[1]); code != 1 || !strings.Contains(errOut, "shard 3/4 is missing") {
		t.Errorf("two of four shards: exit %d, %q", code, errOut)
	}
	// One key: the other shard has none of the log's requests, and still reports.
	one := filepath.Join("testdata", "boundary.log")
	var users []string
	for k := 1; k <= 2; k++ {
		out, errOut, code := rlsim(t, "replay", one, "--key", "user", "--shard", fmt.Sprintf("%d/2", k), "--out", "")
		if code != 0 {
			t.Fatalf("shard %d/2 of one key: exit %d: %s", k, code, errOut)
		}
		users = append(users, filepath.Join(dir, fmt.Sprintf("user-%d.json", k)))
		os.WriteFile(users[k-1], []byte(out), 0o644)
	}
	whole, _, _ := rlsim(t, "replay", one, "--key", "user", "--format", "json", "--out", "")
	if merged, errOut, code := rlsim(t, "merge", users[0], users[1], "--format", "json", "--out", ""); code != 0 || merged != whole {
		t.Errorf("one key in two shards: exit %d, %s:\n%s\n---\n%s", code, errOut, merged, whole)
	}
}

// The shards run as GNU parallel runs them, four processes at once, and merge into the
// bytes of one run. It is skipped where parallel is not installed (CI installs it).
func TestReplayShardsUnderGNUParallel(t *testing.T) {
	par, err := exec.LookPath("parallel")
	if err != nil {
		t.Skip("GNU parallel is not installed")
	}
	bin := rlsimBinary(t)
	dir := t.TempDir()
	log := shardLog(t, dir)
	cmd := exec.Command(par, "--will-cite", "--halt", "now,fail=1", bin+" replay "+log+" --limit 20 --window 1m --shard {}/4 > "+filepath.Join(dir, "part-{}.json"), ":::", "1", "2", "3", "4")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("parallel: %v\n%s", err, out)
	}
	merged, err := exec.Command(bin, "merge", "--format", "json", "--out", "", filepath.Join(dir, "part-1.json"), filepath.Join(dir, "part-2.json"),
		filepath.Join(dir, "part-3.json"), filepath.Join(dir, "part-4.json")).Output()
	if err != nil {
		t.Fatal(err)
	}
	whole, err := exec.Command(bin, "replay", log, "--limit", "20", "--window", "1m", "--format", "json", "--out", "").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(merged, whole) {
		t.Errorf("the merge of the shards differs from one run:\n%s\n---\n%s", merged, whole)
	}
}

// burstLog writes a log in the given format (combined, whole seconds; or jsonl, to the
// millisecond) in which the busiest key of a bin moves from shard to shard, in three acts:
//   - 6 episodes, 150 s apart, in each of which 60 addresses of their own send a burst of
//     1 to 19 requests, two addresses a second, the first the largest: the busiest key
//     leads the quiet bins after its burst has left the window while a smaller one's has not;
//   - 6 ties: two addresses reach 5 at one instant, one of them with 4 requests sent 20 s
//     before, so the two keep different counts after — which one leads is decided by the
//     order of their lines, the first or the second one way round in turn;
//   - 6 bin starts at which the leader's burst is about to leave the window: the first
//     request past the bin's start is another address's, the next the leader's own.
func burstLog(t *testing.T, dir, format string) string {
	t.Helper()
	type req struct {
		sec, ms int
		ip      string
	}
	var reqs []req
	send := func(sec, ms, n int, ip string) {
		for i := range n {
			reqs = append(reqs, req{sec, (ms + i*17) % 1000, ip})
		}
	}
	for e := range 6 {
		for j := range 60 {
			size := 1 + (j*7+e)%17
			if j == 0 {
				size = 19
			}
			if j%2 == 1 && j%3 == 0 {
				size = 1 + ((j-1)*7+e)%17 // the size of the burst beside it
			}
			send(e*150+j/2, j*31, size, fmt.Sprintf("198.51.%d.%d", e, j))
		}
	}
	for e := range 6 {
		at := 900 + e*90 + 30
		a, b := fmt.Sprintf("192.0.2.%d", 2*e), fmt.Sprintf("192.0.2.%d", 2*e+1)
		send(at-20, 0, 4, a)
		if e%2 == 0 {
			send(at, 500, 1, a)
			reqs = append(reqs, req{at, 500, b}, req{at, 500, b}, req{at, 500, b}, req{at, 500, b}, req{at, 500, b})
		} else {
			reqs = append(reqs, req{at, 500, b}, req{at, 500, b}, req{at, 500, b}, req{at, 500, b}, req{at, 500, b})
			send(at, 500, 1, a)
		}
	}
	for e := range 6 {
		at := 1440 + e*80
		leader, other := fmt.Sprintf("203.0.113.%d", 2*e), fmt.Sprintf("203.0.113.%d", 2*e+1)
		send(at+1, 0, 10, leader)
		reqs = append(reqs, req{at + 61, 0, other}, req{at + 61, 0, leader})
	}
	// The log in time order, as a server writes it; lines of one instant keep their order.
	slices.SortStableFunc(reqs, func(a, b req) int { return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.ms, b.ms)) })
	var out strings.Builder
	for _, r := range reqs {
		clock := fmt.Sprintf("%02d:%02d:%02d", 10+r.sec/3600, r.sec/60%60, r.sec%60)
		if format == "combined" {
			fmt.Fprintf(&out, "%s\n", combinedLine(r.ip, clock))
		} else {
			fmt.Fprintf(&out, `{"time":"2026-01-01T%s.%03dZ","ip":%q}`+"\n", clock, r.ms, r.ip)
		}
	}
	path := filepath.Join(dir, "bursts."+format)
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The shards of a log whose busiest key moves between shards merge into one run's bytes
// everywhere, the timeline's busiest-window column (timeline.csv, the window chart's data)
// included: in two log formats, over 2 and over 4 shards, in the results folder and on
// stdout, and with layers.
func TestReplayShardsMergeTheBusiestWindowOfOneRun(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		format string
		args   []string
		shards []int
	}{
		{"combined", []string{"--limit", "20", "--window", "1m"}, []int{2, 4}},
		{"jsonl", []string{"--limit", "20", "--window", "1m"}, []int{2, 4}},
		{"combined", []string{"--layer", "ip:20/1m", "--layer", "ipv6/48:30/1m"}, []int{2}},
	} {
		format, args := tt.format, append(tt.args, "--algorithms", "sliding-log,token-bucket")
		log := burstLog(t, dir, format)
		wholeOut := filepath.Join(dir, fmt.Sprintf("%s-%d-whole", format, len(args)))
		if _, errOut, code := rlsim(t, append([]string{"replay", log, "--log-format", format, "--out", wholeOut}, args...)...); code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, errOut)
		}
		for _, n := range tt.shards {
			var parts []string
			for k := n; k >= 1; k-- {
				out, errOut, code := rlsim(t, append([]string{"replay", log, "--log-format", format, "--shard", fmt.Sprintf("%d/%d", k, n), "--out", ""}, args...)...)
				if code != 0 {
					t.Fatalf("%s shard %d/%d: exit %d: %s", format, k, n, code, errOut)
				}
				part := filepath.Join(dir, fmt.Sprintf("%s-%d-of-%d.json", format, k, n))
				os.WriteFile(part, []byte(out), 0o644)
				parts = append(parts, part)
			}
			mergedOut := filepath.Join(dir, fmt.Sprintf("%s-%d-merged-%d", format, len(args), n))
			if _, errOut, code := rlsim(t, append([]string{"merge", "--out", mergedOut}, parts...)...); code != 0 {
				t.Fatalf("%s, %d shards: merge exit %d: %s", format, n, code, errOut)
			}
			for _, f := range []string{"timeline.csv", "results.json", "results.csv", "summary.md"} {
				a, err1 := os.ReadFile(filepath.Join(wholeOut, "bursts", f))
				b, err2 := os.ReadFile(filepath.Join(mergedOut, "bursts", f))
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Errorf("%s %v, %d shards: %s differs from one run's (%v, %v):\n%s", format, tt.args, n, f, err1, err2, firstDifference(string(b), string(a)))
				}
			}
			if n != 4 || format != "combined" {
				continue
			}
			for _, out := range []string{"json", "csv", "table"} {
				whole, _, _ := rlsim(t, append([]string{"replay", log, "--log-format", format, "--format", out, "--out", ""}, args...)...)
				merged, errOut, code := rlsim(t, append([]string{"merge", "--format", out, "--out", ""}, parts...)...)
				if code != 0 || merged != whole {
					t.Errorf("%s, --format %s: merge (exit %d, %s) differs from one run:\n%s", format, out, code, errOut, firstDifference(merged, whole))
				}
			}
		}
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: got  %q\nline %d: want %q", i+1, a, i+1, b)
		}
	}
	return "(no difference)"
}
