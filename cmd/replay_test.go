package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if !strings.Contains(errOut, "3 of 203 lines could not be read") {
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
		{[]string{"replay", garbage, "--log-format", "xml"}, 2, `--log-format: unknown format "xml"`},
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

// TestReplayKeysEveryIdentityInEveryFormat replays, for every key rlsim knows and every
// log format that carries it, four lines from two clients (two each) at a limit of one a
// minute: each client gets its first request through, so every algorithm admits 2, and
// the decisions file names both clients. A replay that put every line on one key (or on
// none) admits 1.
func TestReplayKeysEveryIdentityInEveryFormat(t *testing.T) {
	type client struct{ ip, xff, user, account, tenant, apiKey, path string }
	clients := [2]client{
		{"203.0.113.7", "198.51.100.1, 192.0.2.10", "alice", "acct-a", "tenant-a", "key-a", "/a"},
		{"203.0.113.8", "198.51.100.2, 192.0.2.11", "bob", "acct-b", "tenant-b", "key-b", "/b"},
	}
	v6 := [2]string{"2001:db8:0:1::7", "2001:db8:0:2::7"}
	times := []string{"10:00:01", "10:00:02", "10:00:03", "10:00:04"}
	// Lines alternate alice, bob, alice, bob.
	who := func(i int) client { return clients[i%2] }
	jsonl := func(ipv6 bool) string {
		var b strings.Builder
		for i, ts := range times {
			c := who(i)
			ip := c.ip
			if ipv6 {
				ip = v6[i%2]
			}
			fmt.Fprintf(&b, `{"time":"2026-01-01T%sZ","ip":%q,"xff":%q,"user":%q,"account":%q,"tenant":%q,"api_key":%q,"method":"GET","path":%q}`+"\n",
				ts, ip, c.xff, c.user, c.account, c.tenant, c.apiKey, c.path)
		}
		return b.String()
	}
	csvLog := func(ipv6 bool) string {
		var b strings.Builder
		b.WriteString("time,ip,xff,user,account,tenant,api_key,method,path\n")
		for i, ts := range times {
			c := who(i)
			ip := c.ip
			if ipv6 {
				ip = v6[i%2]
			}
			fmt.Fprintf(&b, "2026-01-01T%sZ,%s,\"%s\",%s,%s,%s,%s,GET,%s\n", ts, ip, c.xff, c.user, c.account, c.tenant, c.apiKey, c.path)
		}
		return b.String()
	}
	combined := func(ipv6 bool) string {
		var b strings.Builder
		for i, ts := range times {
			c := who(i)
			ip := c.ip
			if ipv6 {
				ip = v6[i%2]
			}
			fmt.Fprintf(&b, `%s - %s [01/Jan/2026:%s +0000] "GET %s?x=1 HTTP/1.1" 200 10 "-" "ua" "%s"`+"\n", ip, c.user, ts, c.path, c.xff)
		}
		return b.String()
	}
	formats := []struct {
		name string
		ext  string
		make func(ipv6 bool) string
		keys []string // the keys the format carries
	}{
		{"jsonl", ".jsonl", jsonl, []string{"user", "account", "tenant", "api-key", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost"}},
		{"csv", ".csv", csvLog, []string{"user", "account", "tenant", "api-key", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost"}},
		{"combined", ".log", combined, []string{"user", "account", "route", "ip", "ipv6/64", "xff:1"}},
	}
	dir := t.TempDir()
	for _, f := range formats {
		for _, key := range f.keys {
			t.Run(f.name+"/"+key, func(t *testing.T) {
				ipv6 := key == "ipv6/64"
				file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(f.name+"-"+key)+f.ext)
				if err := os.WriteFile(file, []byte(f.make(ipv6)), 0o644); err != nil {
					t.Fatal(err)
				}
				decisions := file + ".decisions.csv"
				r := runJSON(t, "replay", file, "--log-format", f.name, "--key", key, "--limit", "1", "--window", "1m",
					"--decisions", decisions, "--out", "")
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
				if len(keys) != 2 || keys[""] {
					t.Errorf("decisions name keys %v, want the two clients'", keys)
				}
			})
		}
	}
}
