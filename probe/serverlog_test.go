package probe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/scenario"
)

// loggingServer decides each request with an nginx model at the time it says the request
// arrived — the probe's clock plus a delay of up to 400 ms of its own, drawn from a seeded source, as a
// network and a busy server add — and writes its access log line by line, in one of the
// formats a probe reads. It logs no line for the requests numbered in drop, and some
// lines of other traffic between the probe's.
type loggingServer struct {
	clock  *fakeClock
	format string // "nginx", "nginx-custom" or "haproxy"
	drop   []int

	mu      sync.Mutex
	lim     algorithms.Limiter
	keys    map[string]uint32
	rng     *rand.Rand
	lastMS  int64
	log     *os.File
	written int
	// arrivals are the arrival of each tag, in Unix milliseconds.
	arrivals map[string]int64
}

func (s *loggingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.Header.Get("X-User")
	id, ok := s.keys[key]
	if !ok {
		id = uint32(len(s.keys))
		s.keys[key] = id
	}
	// The arrival on the server's millisecond clock, never before the last: it decides
	// in the order requests reach it.
	at := (s.clock.Now().UnixNano() + s.rng.Int64N(int64(400*time.Millisecond))) / 1e6
	at = max(at, s.lastMS)
	s.lastMS = at
	status := http.StatusOK
	if !s.lim.Allow(id, at*1e6, 1).Allowed {
		status = http.StatusTooManyRequests
	}
	w.WriteHeader(status)
	tag := r.Header.Get(TagHeader)
	s.arrivals[tag] = at
	n, _ := strconv.Atoi(tag[strings.LastIndexByte(tag, '-')+1:])
	if slices.Contains(s.drop, n) {
		return
	}
	if n%9 == 0 {
		s.line(at-3, 0, 200, "other", "-") // a client that is not the probe
	}
	if n%13 == 0 {
		s.line(at-2, 0, 429, "other", "l2z9xq-"+strconv.Itoa(n)) // another probe's run
	}
	// The line is written when the request completes, up to half a second later.
	s.line(at, s.rng.Int64N(500), status, key, tag)
}

// line writes the log line of a request that arrived at ms and took took ms.
func (s *loggingServer) line(ms, took int64, status int, key, tag string) {
	var text string
	done := ms + took
	switch s.format {
	case "nginx":
		text = fmt.Sprintf("%d.%03d %d.%03d %d %s", done/1000, done%1000, took/1000, took%1000, status, tag)
	case "nginx-custom":
		local := time.UnixMilli(done).UTC().Format("02/Jan/2006:15:04:05 -0700")
		text = fmt.Sprintf(`127.0.0.1 - [%s] "GET /api/?k=%s HTTP/1.1" %d %d.%03d %d.%03d "%s"`, local, key, status, done/1000, done%1000, took/1000, took%1000, tag)
	case "haproxy":
		if tag == "-" {
			tag = ""
		}
		date := time.UnixMilli(ms).UTC().Format("02/Jan/2006:15:04:05.000")
		text = fmt.Sprintf(`Jan  1 10:00:59 lb1 haproxy[14389]: 127.0.0.1:%d [%s] http-in be/srv1 0/0/0/%d/%d %d 2 - - ---- 1/1/1/1/0 0/0 {%s|%s} "GET /api/ HTTP/1.1"`,
			40000+s.written%20000, date, took, took, status, key, tag)
	}
	s.written++
	fmt.Fprintln(s.log, text)
}

// serverLogFormats are the --server-log-format each of loggingServer's formats is read by.
var serverLogFormats = map[string]string{
	"nginx":        "nginx",
	"nginx-custom": `log_format probe '$remote_addr - [$time_local] "$request" $status $msec $request_time "$http_x_rlsim_probe"';`,
	"haproxy":      "haproxy:2",
}

// probeLogging probes a loggingServer with the short traffic of
// cmd/testdata/probe-serverlog.yaml (three keys: a burst, a stream above the rate, two
// bursts), its log holding a few lines of old traffic before the probe starts, and
// returns the observation on the probe's estimates and the one on the server's log.
func probeLogging(t *testing.T, format string, drop ...int) (srv *loggingServer, estimated, logged Observed, m LogMatch, err error) {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "cmd", "testdata", "probe-serverlog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := FromScenario(sc, sc.SeedOr(scenario.DefaultSeed), 1, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Keys) < 3 {
		t.Fatalf("keys %v", plan.Keys)
	}
	lim, err := algorithms.New("nginx:rate=10r/s burst=20", algorithms.Policy{Limit: 1, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "access.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clock := &fakeClock{t: time.Unix(1_767_261_600, 345_678_901)}
	srv = &loggingServer{clock: clock, format: format, drop: drop, lim: lim, keys: map[string]uint32{}, arrivals: map[string]int64{},
		rng: rand.New(rand.NewPCG(7, uint64(len(format)))), log: f}
	for i := range 3 {
		srv.line(clock.Now().UnixMilli()-int64(60_000-i), 1, 200, "old", "-")
	}
	sl, err := OpenServerLog(path, serverLogFormats[format], true)
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	run := RunTag(start)
	xs, err := Run(context.Background(), plan, Target{URL: "http://rlsim.test/", KeyHeader: "X-User", Concurrency: 1,
		Timeout: time.Second, RefusedCodes: []int{429}, Transport: inProcess(srv), Tag: run}, clock, start)
	if err != nil {
		t.Fatal(err)
	}
	estimated = Observe(xs, start, []int{429})
	logged, m, err = sl.Match(context.Background(), clock, estimated, run)
	return srv, estimated, logged, m, err
}

// TestServerLogGivesTheServersArrivals: a server that decides at arrival times of its own,
// up to 400 ms after the probe sent, and logs them (nginx's $msec − $request_time, in the
// default and a custom log_format, and HAProxy's request date): every decision gets the
// very arrival the server decided at, and the model reproduces every decision without a
// move; the log's lines of other traffic and of another probe are counted and left out.
func TestServerLogGivesTheServersArrivals(t *testing.T) {
	for _, format := range []string{"nginx", "nginx-custom", "haproxy"} {
		t.Run(format, func(t *testing.T) {
			srv, est, obs, m, err := probeLogging(t, format)
			if err != nil {
				t.Fatal(err)
			}
			n := len(est.Decisions)
			if m.Matched != n || len(m.Missing) != 0 || m.LoggedTwice != 0 {
				t.Fatalf("matched %+v of %d", m, n)
			}
			// Lines of other traffic: one every 9th request, another run's every 13th.
			if want := n/9 + n/13; m.Other != want || m.Lines != n+want {
				t.Errorf("%d lines, %d of other traffic; want %d and %d", m.Lines, m.Other, n+want, want)
			}
			if obs.Jitter != MinJitter || len(obs.Decisions) != n {
				t.Fatalf("jitter %s, %d decisions", obs.Jitter, len(obs.Decisions))
			}
			for i, d := range obs.Decisions {
				if want := srv.arrivals[d.Tag] * 1e6; d.Arrival != want {
					t.Fatalf("seq %d (%s) arrived at %d, the server says %d", d.Seq, d.Tag, d.Arrival, want)
				}
				if i > 0 && d.Arrival < obs.Decisions[i-1].Arrival {
					t.Fatalf("out of order at %d", i)
				}
			}
			a, err := Agree(obs, "nginx:rate=10r/s burst=20", algorithms.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := Agree(est, "nginx:rate=10r/s burst=20", algorithms.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("on the server's log: %s (%d within jitter); on the estimates: %s", a, a.WithinJitter, b)
			if a.Agreed != n {
				t.Errorf("on the server's log the model agrees on %s, %d within jitter: %+v", a, a.WithinJitter, a.Differences)
			}
		})
	}
}

// TestServerLogNamesWhatIsMissing: requests the log has no line for are counted and named
// by seq, key and tag, still judged (at their send time plus the median offset), never
// dropped.
func TestServerLogNamesWhatIsMissing(t *testing.T) {
	for _, format := range []string{"nginx", "haproxy"} {
		t.Run(format, func(t *testing.T) {
			_, est, obs, m, err := probeLogging(t, format, 7, 30, 31)
			if err != nil {
				t.Fatal(err)
			}
			n := len(est.Decisions)
			var seqs []int
			for _, r := range m.Missing {
				seqs = append(seqs, r.Seq)
				if !strings.HasSuffix(r.Tag, "-"+strconv.Itoa(r.Seq)) || r.Key == "" {
					t.Errorf("missing %+v", r)
				}
			}
			if m.Matched != n-3 || !slices.Equal(seqs, []int{7, 30, 31}) || len(obs.Decisions) != n {
				t.Fatalf("matched %d of %d, missing %v, judged %d", m.Matched, n, seqs, len(obs.Decisions))
			}
			if s := m.String(); !strings.Contains(s, "3 missing") || !strings.Contains(s, "seq 30 (key ") {
				t.Errorf("%s", s)
			}
			if m.OffsetMS <= 0 || m.OffsetMS > 400 {
				t.Errorf("offset %.2f ms, want within the server's 400 ms", m.OffsetMS)
			}
		})
	}
}

// TestServerLogErrors: a malformed line is one error naming the file and the line of the
// whole file (lines before the probe counted); a log with none of the probe's requests, a
// log_format without what it needs and a bad format are errors saying so.
func TestServerLogErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	obs := Observed{Decisions: []Decision{{Seq: 1, Key: "a", Tag: "r1-1", Sent: 1}, {Seq: 2, Key: "b", Tag: "r1-2", Sent: 2}}}
	old := "1767261600.001 0.000 200 -\n1767261600.002 0.000 200 -\n"
	for _, tt := range []struct {
		name, format, text string
		fromEnd            bool
		want               string
	}{
		{"bad.log", "nginx", "1767261600.101 0.001 200 r1-1\n1767261600.1x2 0.001 200 r1-2\n", false, "bad.log:2: $msec"},
		{"late.log", "nginx", old + "1767261600.101 0.001 200 r1-1\ngarbage\n", true, "late.log:4: "},
		{"ha.log", "haproxy:2", `127.0.0.1:5 [01/Jan/2026:10:00:59.900] f b/s 0/0/0/1/1 200 2 - - ---- 1/1/1/1/0 0/0 {a|r1-1} "GET / HTTP/1.1"` + "\nnot haproxy\n", false, "ha.log:2: "},
		{"none.log", "nginx", "1767261600.101 0.001 200 r2-1\n", false, "none of the 2 requests is in the log"},
		{"x.log", `$msec $status $http_x_rlsim_probe`, "", false, "no $request_time"},
		{"x.log", `$msec $request_time $status`, "", false, "no $http_x_rlsim_probe"},
		{"x.log", "haproxy:0", "", false, "haproxy:N"},
		{"x.log", "caddy", "", false, "want nginx, an nginx log_format"},
	} {
		path := write(tt.name, "")
		if tt.fromEnd {
			path = write(tt.name, old)
		}
		s, err := OpenServerLog(path, tt.format, tt.fromEnd)
		if err == nil {
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err = s.Match(context.Background(), nil, obs, "r1")
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want %q", tt.name, tt.format, err, tt.want)
		}
	}
	if _, err := OpenServerLog(filepath.Join(dir, "absent.log"), "nginx", true); err == nil || !os.IsNotExist(err) {
		t.Errorf("absent log: %v", err)
	}
}

// TestRunOf: a decisions file's run is what its tags share; an untagged decision or two
// runs are errors naming the seq.
func TestRunOf(t *testing.T) {
	obs := func(tags ...string) Observed {
		var o Observed
		for i, tag := range tags {
			o.Decisions = append(o.Decisions, Decision{Seq: i + 1, Tag: tag})
		}
		return o
	}
	if r, err := RunOf(obs("abc-1", "abc-2"), "d.csv"); r != "abc" || err != nil {
		t.Errorf("%q %v", r, err)
	}
	if _, err := RunOf(obs("abc-1", ""), "d.csv"); err == nil || !strings.Contains(err.Error(), "d.csv: seq 2 has no tag") {
		t.Errorf("%v", err)
	}
	if _, err := RunOf(obs("abc-1", "abd-2"), "d.csv"); err == nil || !strings.Contains(err.Error(), "seq 2 is tagged by run abd") {
		t.Errorf("%v", err)
	}
}

// FuzzServerLog: any log is read or refused with an error naming the file, never a panic.
func FuzzServerLog(f *testing.F) {
	f.Add("1767261600.101 0.001 200 r1-1\n1767261600.102 0.001 429 r1-2\n", false)
	f.Add("1767261600.101 0.001 200 -\n1767261600.101 0.001 200 r1-1\n1767261600.101 0.001 200 r1-1\n", false)
	f.Add(`127.0.0.1:5 [01/Jan/2026:10:00:59.900] f b/s 0/0/0/1/1 200 2 - - ---- 1/1/1/1/0 0/0 {r1-1} "GET / HTTP/1.1"`+"\n", true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string, haproxy bool) {
		path := filepath.Join(dir, "fuzz.log")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		format := "nginx"
		if haproxy {
			format = "haproxy"
		}
		s, err := OpenServerLog(path, format, false)
		if err != nil {
			t.Fatal(err)
		}
		obs := Observed{Decisions: []Decision{{Seq: 1, Key: "a", Tag: "r1-1", Sent: 1}, {Seq: 2, Key: "a", Tag: "r1-2", Sent: 2}}}
		got, m, err := s.Match(context.Background(), nil, obs, "r1")
		if err != nil {
			if !strings.HasPrefix(err.Error(), path) {
				t.Fatalf("error not naming the file: %v", err)
			}
			return
		}
		if m.Matched+len(m.Missing) != 2 || len(got.Decisions) != 2 || m.Matched == 0 {
			t.Fatalf("%+v %+v", m, got)
		}
	})
}

// TestAdmittedFirstPartsTies: the requests of a burst a server's log puts in one
// millisecond, observed refused before admitted, are replayed admitted first, as a
// limiter that admits a prefix of a burst saw them; a second key's tie is its own.
func TestAdmittedFirstPartsTies(t *testing.T) {
	at := time.Unix(1_767_261_600, 0).UnixNano()
	var ds []Decision
	for _, key := range []string{"a", "b"} {
		for i, ok := range []bool{false, false, true, true, true} {
			ds = append(ds, Decision{Seq: len(ds) + 1, Key: key, Cost: 1, Arrival: at + int64(i%2), Admitted: ok})
		}
	}
	s, err := algorithms.Parse("nginx:rate=10r/s burst=2 nodelay")
	if err != nil {
		t.Fatal(err)
	}
	arrivals := admittedFirst(ds, MinJitter)
	got := replay(s, algorithms.Policy{}, ds, keyIDs(ds), arrivals)
	for i, d := range ds {
		if got[i] != d.Admitted {
			t.Fatalf("seq %d: replayed %v, observed %v (arrivals %v)", d.Seq, got[i], d.Admitted, arrivals)
		}
		if arrivals[i] < at || arrivals[i] > at+int64(len(ds)) {
			t.Fatalf("seq %d moved to %d", d.Seq, arrivals[i]-at)
		}
	}
}
