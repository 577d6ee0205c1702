package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/gateway"
)

// snippetServed is one real server a snippet runs in: the spec and key the snippet
// deploys, and what the test made of it.
type snippetServed struct {
	product, spec, key string
	// readSpec and readKey are what import reads the snippet back as.
	readSpec, readKey string
	base, log         string
	run               realRun
	err               error
}

// TestSnippetsDecideAsTheirModels starts a real nginx and a real HAProxy of the test's own
// for each snippet (where they are installed; CI has both), each with the snippet
// gateway.Snippet writes for a spec and key pasted into a minimal configuration, sends
// rlsim's traffic through it (535 requests on six keys over 17 s), and requires the model
// of the spec import reads back from the snippet to reproduce every decision the server
// logged, as TestModelsReproduceRealServers does for .ci/run's configurations. A key of ip
// is one key here: every request comes from 127.0.0.1.
func TestSnippetsDecideAsTheirModels(t *testing.T) {
	cases := []*snippetServed{
		{product: "nginx", spec: "nginx:rate=10r/s burst=5 nodelay", key: "user"},
		{product: "nginx", spec: "nginx:rate=20r/s burst=10 delay=4", key: "ip"},
		{product: "haproxy", spec: "haproxy:period=2s gt=8", key: "user"},
		{product: "haproxy", spec: "haproxy:period=10s gt=100", key: "ip"},
	}
	// And the snippet rlsim tune --for nginx recommends for a log, deployed as tune wrote it.
	out, errOut, code := rlsim(t, "tune", constructedLog(t, "jsonl"), "--for", "nginx", "--key", "user",
		"--goal", "legit-refused<=0%", "--format", "json", "--out", "")
	if code != 0 {
		t.Fatalf("tune --for nginx: exit %d: %s", code, errOut)
	}
	var tuned struct {
		Recommended *tunePoint `json:"recommended"`
	}
	if err := json.Unmarshal([]byte(out), &tuned); err != nil || tuned.Recommended == nil {
		t.Fatalf("tune JSON: %v\n%s", err, out)
	}
	cases = append(cases, &snippetServed{product: "nginx", spec: tuned.Recommended.Spec, key: tuned.Recommended.Key})
	start := map[string]func(t *testing.T, dir, snippet string) (base, log string){}
	for product, f := range map[string]func(t *testing.T, dir, snippet string) (string, string){"nginx": startSnippetNginx, "haproxy": startSnippetHAProxy} {
		if _, err := exec.LookPath(product); err == nil {
			start[product] = f
		} else if _, err := os.Stat("/usr/sbin/" + product); err == nil {
			start[product] = f
		} else {
			t.Logf("%s is not installed: its snippets are skipped", product)
		}
	}
	var run []*snippetServed
	for _, c := range cases {
		if start[c.product] != nil {
			run = append(run, c)
		}
	}
	if len(run) == 0 {
		t.Skip("neither nginx nor haproxy is installed")
	}
	t.Parallel()
	for _, c := range run {
		snippet, err := gateway.Snippet(c.spec, c.key)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		name := map[string]string{"nginx": "snippet.conf", "haproxy": "haproxy.cfg"}[c.product]
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(snippet), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := gateway.Read(path, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Found) != 1 {
			t.Fatalf("import reads %d limits from the snippet of %s, want 1", len(r.Found), c.spec)
		}
		c.readSpec, c.readKey = r.Found[0].Spec(), r.Found[0].Key
		if c.readSpec != c.spec || c.readKey != c.key {
			t.Fatalf("import reads the snippet of %s keyed %s as %s keyed %s", c.spec, c.key, c.readSpec, c.readKey)
		}
		c.base, c.log = start[c.product](t, dir, snippet)
	}
	var wg sync.WaitGroup
	for _, c := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run, c.err = sendReal(c.base, realLimit{path: "/", spec: c.readSpec, scenario: realTraffic})
		}()
	}
	wg.Wait()
	for _, c := range run {
		t.Run(c.product+"/"+c.key, func(t *testing.T) {
			if c.err != nil {
				t.Fatal(c.err)
			}
			limit := realLimit{path: "/", spec: c.readSpec, scenario: realTraffic}
			parse := map[string]func([]string) (served, error){"nginx": parseNginx, "haproxy": parseHAProxy}[c.product]
			log := readServed(t, c.log, c.run, parse)
			if c.key == "ip" {
				for i := range log {
					log[i].key = "127.0.0.1"
				}
			}
			if c.product == "haproxy" {
				checkHAProxy(t, limit, c.run, log)
				return
			}
			r := replayLog(t, limit.spec, log, -1, false)
			replayed := replayServed(t, limit.spec, log, r)
			t.Logf("nginx running the snippet of %q keyed %s: %d requests, nginx admitted %d, rlsim replay of its arrivals %d; the model reproduces %d decisions, %d of them only within 1 ms of a boundary, and not %d",
				c.spec, c.key, r.requests, r.admitted, replayed, r.requests-r.differ, r.boundary, r.differ)
			checkReplay(t, limit, c.run, r)
			if gap := replayed - int64(r.admitted); max(gap, -gap) > int64(r.differ) {
				t.Errorf("rlsim replay admits %d, nginx %d", replayed, r.admitted)
			}
		})
	}
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer runs a server in the foreground until the test ends, its standard output
// to stdout (nil: discarded) and its errors to the file stderr, and waits until it
// answers on port.
func startServer(t *testing.T, port int, stdout io.Writer, stderr string, bin string, args ...string) {
	t.Helper()
	errs, err := os.Create(stderr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		errs.Close()
	})
	for range 100 {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ := os.ReadFile(stderr)
	t.Fatalf("%s did not start: %s", bin, out)
}

func serverBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return "/usr/sbin/" + name
}

// startSnippetNginx runs nginx with the snippet inside http { }, its server on a free
// loopback port in front of a static file, logging every request as
// TestModelsReproduceRealServers's nginx does.
func startSnippetNginx(t *testing.T, dir, snippet string) (base, log string) {
	port := freePort(t)
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(www, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// nginx started as root serves as nobody: everything it reads must be world-readable,
	// up from the test's own folder.
	for d := www; d != filepath.Dir(filepath.Dir(dir)); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log = filepath.Join(dir, "limits.log")
	server := strings.Replace(snippet, "server {\n", fmt.Sprintf("server {\n    listen 127.0.0.1:%d;\n", port), 1)
	var b strings.Builder
	fmt.Fprintf(&b, "worker_processes 1;\nerror_log %s/error.log;\nevents { worker_connections 4096; }\nhttp {\n", dir)
	for _, temp := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "  %s_temp_path %s/tmp/%s;\n", temp, dir, temp)
	}
	fmt.Fprintf(&b, "  log_format limits '$msec $request_time $limit_req_status $status $uri $http_x_user';\n")
	fmt.Fprintf(&b, "  access_log %s limits;\n  root %s;\n%s}\n", log, www, server)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	startServer(t, port, nil, filepath.Join(dir, "nginx.err"), serverBin("nginx"),
		"-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf, "-g", "daemon off; pid "+filepath.Join(dir, "nginx.pid")+";")
	return "http://127.0.0.1:" + strconv.Itoa(port), log
}

// startSnippetHAProxy runs HAProxy with the snippet, its frontend bound to a free
// loopback port and answering 200 itself, logging every request as
// TestModelsReproduceRealServers's HAProxy does: the date and the rate read when the
// request was tracked, its status, path and X-User.
func startSnippetHAProxy(t *testing.T, dir, snippet string) (base, log string) {
	port := freePort(t)
	log = filepath.Join(dir, "haproxy.log")
	lines := strings.Split(snippet, "\n")
	var cfg []string
	for _, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case trimmed == "frontend fe":
			cfg = append(cfg, l, fmt.Sprintf("    bind 127.0.0.1:%d", port),
				"    http-request set-var(txn.t) date(0,ms)",
				"    http-request set-var(txn.key) req.hdr(x-user)",
				"    http-request set-var(txn.path) path")
		case strings.HasPrefix(trimmed, "http-request track-sc0 "):
			cfg = append(cfg, l, "    http-request set-var(txn.rate) sc_http_req_rate(0)")
		case strings.HasPrefix(trimmed, "http-request deny "):
			cfg = append(cfg, l, "    http-request return status 200 content-type text/plain string ok")
		default:
			cfg = append(cfg, l)
		}
	}
	head := `global
  nbthread 1
  log stdout format raw local0
defaults
  mode http
  log global
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  timeout http-keep-alive 30s
  log-format "%[var(txn.t)] %ST %[var(txn.rate)] %[var(txn.path)] %[var(txn.key)]"
`
	conf := filepath.Join(dir, "haproxy-run.cfg")
	if err := os.WriteFile(conf, []byte(head+strings.Join(cfg, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	startServer(t, port, out, filepath.Join(dir, "haproxy.err"), serverBin("haproxy"), "-db", "-f", conf)
	return "http://127.0.0.1:" + strconv.Itoa(port), log
}

// TestTuneVerifiesItsSnippetOnRealNginx is tune's whole loop on a real nginx: tune a log
// --for nginx, deploy the snippet it prints, and tune the same log again with --verify
// sending the first seconds of the log to that nginx; the server must decide as the
// recommendation's model does. The log's ten users each send bursts of 3 every 1.1 s, and
// an eleventh bursts of 8 every 1.1 s from 1.65 s, so the server refuses some of the
// requests sent and the agreement is about refusals too. Bursts 1.1 s apart leave the
// recommended bucket tens of milliseconds from a whole request when the next arrives:
// traffic exactly 1 s apart would leave the smallest bucket that admits it exactly full
// then, and a millisecond of jitter would decide.
func TestTuneVerifiesItsSnippetOnRealNginx(t *testing.T) {
	if _, err := os.Stat(serverBin("nginx")); err != nil {
		t.Skip("nginx is not installed")
	}
	t.Parallel()
	epoch := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var lines []string
	add := func(at time.Duration, user, label string) {
		lines = append(lines, fmt.Sprintf(`{"time":%q,"user":%q,"label":%q}`, epoch.Add(at).Format("2006-01-02T15:04:05.000Z"), user, label))
	}
	for s := range 6 {
		for u := range 10 {
			for range 3 {
				add(time.Duration(s)*1100*time.Millisecond+time.Duration(u)*90*time.Millisecond, fmt.Sprintf("user_%d", u), "legit")
			}
		}
	}
	for s := 1; s < 5; s++ {
		for range 8 {
			add(time.Duration(s)*1100*time.Millisecond+550*time.Millisecond, "mallory", "attacker")
		}
	}
	slices.SortStableFunc(lines, func(a, b string) int { return strings.Compare(a[:40], b[:40]) })
	log := filepath.Join(t.TempDir(), "users.jsonl")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"tune", log, "--for", "nginx", "--key", "user", "--goal", "legit-refused<=0%", "--window", "1s", "--format", "json", "--out", ""}
	out, errOut, code := rlsim(t, args...)
	if code != 0 {
		t.Fatalf("tune: exit %d: %s", code, errOut)
	}
	var first struct {
		Recommended *tunePoint `json:"recommended"`
		Snippet     string     `json:"snippet"`
	}
	if err := json.Unmarshal([]byte(out), &first); err != nil || first.Recommended == nil || first.Snippet == "" {
		t.Fatalf("tune JSON: %v\n%s", err, out)
	}
	base, _ := startSnippetNginx(t, t.TempDir(), first.Snippet)
	out, errOut, code = rlsim(t, append(args, "--verify", base+"/", "--verify-for", "7s")...)
	if code != 0 {
		t.Fatalf("tune --verify: exit %d: %s", code, errOut)
	}
	var second struct {
		Recommended *tunePoint `json:"recommended"`
		Served      *struct {
			Requests, Keys, Agreed int
			WithinJitter           int `json:"within_jitter"`
			Differ                 int
			Agreement              float64
		} `json:"served"`
	}
	if err := json.Unmarshal([]byte(out), &second); err != nil || second.Served == nil {
		t.Fatalf("tune --verify JSON: %v\n%s", err, out)
	}
	v := second.Served
	t.Logf("nginx running %s: %d requests over %d keys, %d agreed, %d within jitter, %d differ", first.Recommended.Spec, v.Requests, v.Keys, v.Agreed, v.WithinJitter, v.Differ)
	if second.Recommended.Spec != first.Recommended.Spec || v.Requests != len(lines) || v.Keys != 11 || v.Agreement < 0.99 {
		t.Fatalf("--verify: %+v for %s", *v, second.Recommended.Spec)
	}
	// A server running another configuration (a burst of 17 queued, not refused) is caught.
	var other []string
	for _, line := range strings.Split(first.Snippet, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "limit_req zone=") {
			line = strings.Replace(strings.Replace(line, " nodelay", "", 1), "burst=", "burst=1", 1)
		}
		other = append(other, line)
	}
	if strings.Join(other, "\n") == first.Snippet {
		t.Fatalf("the snippet has no limit_req line to change:\n%s", first.Snippet)
	}
	base, _ = startSnippetNginx(t, t.TempDir(), strings.Join(other, "\n"))
	if _, errOut, code = rlsim(t, append(args, "--verify", base+"/", "--verify-for", "7s")...); code != 1 || !strings.Contains(errOut, "is that configuration what it runs?") {
		t.Fatalf("--verify of a server running another configuration: exit %d: %s", code, errOut)
	}
}
