package cmd

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/probe"
	"github.com/rlsim/rlsim/scenario"
)

// The real servers .ci/run starts, and the models that must reproduce them. Every limit
// is keyed by the X-User header and refuses with 429; each location or path has a zone
// or table of its own. .ci/run writes the same configurations: change both together.
//
// nginx (RLSIM_NGINX_URL) logs `$msec $request_time $limit_req_status $status $uri
// $http_x_user` for every request to RLSIM_NGINX_LOG; HAProxy (RLSIM_HAPROXY_URL) logs
// `date(0,ms) status sc_http_req_rate(0) path x-user`, the date and rate taken by
// http-request rules when the request was tracked, to RLSIM_HAPROXY_LOG.
var (
	nginxLimits = []realLimit{
		{"/nb/", "nginx:rate=10r/s", realTraffic},
		{"/b/", "nginx:rate=10r/s burst=20", "token-burst"},
		{"/bn/", "nginx:rate=10r/s burst=20 nodelay", "token-burst"},
		{"/bd/", "nginx:rate=10r/s burst=12 delay=8", realTraffic},
		{"/rm/", "nginx:rate=100r/m burst=3", realTraffic},
		{"/two/", "nginx:rate=10r/s burst=5 nodelay + rate=2r/s burst=10", realTraffic},
		{"/fast/", "nginx:rate=10r/s burst=5 nodelay", realTraffic},
		{"/slow/", "nginx:rate=2r/s burst=10", realTraffic},
	}
	haproxyLimits = []realLimit{
		{"/gt20-10s/", "haproxy:period=10s gt=20", realTraffic},
		{"/ge20-10s/", "haproxy:period=10s ge=20", realTraffic},
		{"/ge5-1s/", "haproxy:period=1s ge=5", realTraffic},
		{"/gt8-2s/", "haproxy:period=2s gt=8", realTraffic},
	}
)

// realTraffic is the traffic of most real-server tests: bursts and over-limit Poisson
// arrivals on six keys over 17 s, 535 requests.
var realTraffic = filepath.Join("testdata", "real-limits.yaml")

type realLimit struct{ path, spec, scenario string }

// served is one request as the server logged it.
type served struct {
	at      int64 // the server's clock when it decided, in milliseconds since the Unix epoch
	key     string
	allowed bool
	// nginx: the time the request was held (its request time when delayed); HAProxy: 0.
	held time.Duration
	// delayed is nginx's DELAYED; rate is the rate HAProxy read.
	delayed bool
	rate    int64
}

// replayed is what a model made of a server's log.
type replayed struct {
	requests, admitted int
	// boundary counts the requests the model decides as the server did only with their
	// arrival moved by one millisecond, the server's clock resolution; differ counts
	// those it cannot reproduce at all, and delayDiffer the admitted requests nginx
	// delayed and the model did not, or the other way round.
	boundary, differ, delayDiffer int
	firstDiffer                   string
	// clockSteps are the steps of HAProxy's clock against the date it logs, found where
	// a step reproduces a request no millisecond's move does (see replayLog).
	clockSteps []string
	// heldEarly and heldLate are how much sooner and later than the model's delay the
	// server let a delayed request go, at most, and the means are of the time the
	// server held admitted requests and of the model's delays.
	heldEarly, heldLate       time.Duration
	heldMeanMS, modelHeldMean float64
	// at are the arrivals the replay settled on, in nanoseconds, in the log's order
	// after the sort.
	at []int64
}

// boundaryLookBack is how many of a key's requests before a mismatch a replay tries
// moving by a millisecond, and stepLookAhead how many after it judge a step of
// HAProxy's clock.
const (
	boundaryLookBack = 8
	stepLookAhead    = 100
)

// maxClockStep is the largest step of HAProxy's clock a replay looks for, and
// maxClockSteps how many steps a run may take: a model that is wrong needs a step at
// every turn.
const (
	maxClockStep  = 1000 // ms
	maxClockSteps = 3
)

// replayLog runs a server's decisions through the model spec, in the order the server
// decided them, and compares request by request: the decision, and for HAProxy (pass,
// N for gt N and N − 1 for ge N, is not negative) the rate it read, which an admitted
// request's Remaining gives as N − rate.
//
// The order: by the server's millisecond, then by key. Within one key and millisecond
// the requests are alike, and the order they were decided in shows in what the server
// did with them: nginx admits a prefix of them, each held longer than the one before,
// and HAProxy's rate read grows by one with each.
//
// A request the model decides otherwise is tried again with its arrival a millisecond
// later and earlier, and then with one or two of it and its key's boundaryLookBack
// requests before it a millisecond later or earlier (the model replayed afresh up to
// it). The server decides by a clock whose milliseconds begin a fixed fraction of one
// away from those of the clock its log is written in (nginx's monotonic clock against
// its wall clock), so a request's millisecond on the server is the one logged or the
// next: one on the boundary is a millisecond apart from the requests around it, and may
// decide, or set the time the next ones leak from, otherwise than the log says; the
// model's state may drift from the server's by the leak of a few such milliseconds.
// When a move makes the model decide every request from the one moved to this one as
// the server did, the replay goes on from it and the request counts as a boundary case.
//
// HAProxy's clock also steps away from the date it logs when the process was held up
// for more than 100 ms beyond its poll's timeout, which it takes for the system clock
// jumping (clock_update_date, src/clock.c): from then on its clock runs that much
// behind. With clockSteps set, a request no millisecond's move reproduces is tried with
// it and every later arrival moved by up to maxClockStep either way; of the steps that
// reproduce it, the one under which the model decides most of the stepLookAhead
// requests after it as the server did is kept and reported. Otherwise, or when no step
// reproduces it, it counts as a difference.
func replayLog(t *testing.T, spec string, log []served, pass int64, clockSteps bool) replayed {
	t.Helper()
	slices.SortStableFunc(log, func(a, b served) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if a.allowed != b.allowed {
			if a.allowed {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.held, b.held), cmp.Compare(a.rate, b.rate))
	})
	keys := map[string]uint32{}
	for _, s := range log {
		if _, ok := keys[s.key]; !ok {
			keys[s.key] = uint32(len(keys))
		}
	}
	policy := algorithms.Policy{Limit: 1, Window: time.Second}
	agrees := func(d algorithms.Decision, s served) bool {
		return d.Allowed == s.allowed && (pass < 0 || !s.allowed || d.Remaining == pass-s.rate)
	}
	// replayTo returns a fresh limiter that has decided requests 0 to i at at, and
	// whether it decided each of from to i as the server did.
	replayTo := func(at []int64, from, i int) (algorithms.Limiter, bool, algorithms.Decision) {
		lim, err := algorithms.New(spec, policy)
		if err != nil {
			t.Fatal(err)
		}
		admit := algorithms.AdmitterOf(lim)
		for k := range from {
			admit.Admit(keys[log[k].key], at[k], 1)
		}
		ok := true
		var d algorithms.Decision
		for k := from; k <= i; k++ {
			d = lim.Allow(keys[log[k].key], at[k], 1)
			ok = ok && agrees(d, log[k])
		}
		return lim, ok, d
	}
	// sameKey lists the requests of i's key before it, the latest first, up to
	// boundaryLookBack of them.
	sameKey := func(i int) []int {
		var out []int
		for k := i - 1; k >= 0 && len(out) < boundaryLookBack; k-- {
			if log[k].key == log[i].key {
				out = append(out, k)
			}
		}
		return out
	}
	// decideAt returns a fresh limiter that has decided requests 0 to i−1 at at and
	// request i at at[i] + shift, with that decision.
	decideAt := func(at []int64, i int, shift int64) (algorithms.Limiter, algorithms.Decision) {
		moved := slices.Clone(at[:i+1])
		moved[i] += shift
		lim, _, d := replayTo(moved, i, i)
		return lim, d
	}
	// move moves request j of at a millisecond later (dir 1) or earlier (dir −1), with
	// the requests of its key after it (later) or before it (earlier) in the same
	// millisecond, so that the key's requests stay in order.
	move := func(at []int64, j int, dir int) {
		from := at[j]
		for k := j; k >= 0 && k < len(log); k += dir {
			if log[k].key != log[j].key {
				continue
			}
			if at[k] != from {
				break
			}
			at[k] += int64(dir) * int64(time.Millisecond)
		}
	}
	// bestStep returns the step of the clock from request i on that makes the model
	// decide request i as the server did and most of the stepLookAhead requests after it.
	bestStep := func(at []int64, i int) (int64, bool) {
		best, bestScore := int64(0), -1
		for size := int64(2); size <= maxClockStep; size++ {
			for _, step := range []int64{-size * int64(time.Millisecond), size * int64(time.Millisecond)} {
				moved := slices.Clone(at)
				for j := i; j < len(moved); j++ {
					moved[j] += step
				}
				lim, ok, _ := replayTo(moved, i, i)
				if !ok {
					continue
				}
				score := 0
				for k := i + 1; k < len(log) && k <= i+stepLookAhead; k++ {
					if agrees(lim.Allow(keys[log[k].key], moved[k], 1), log[k]) {
						score++
					}
				}
				if score > bestScore {
					best, bestScore = step, score
				}
			}
		}
		return best, bestScore >= 0
	}
	r := replayed{requests: len(log), at: make([]int64, len(log))}
	for i, s := range log {
		r.at[i] = s.at * int64(time.Millisecond)
	}
	var heldSum, modelSum time.Duration
	var heldCount int
	lim, err := algorithms.New(spec, policy)
	if err != nil {
		t.Fatal(err)
	}
	ms := int64(time.Millisecond)
	for i, s := range log {
		if s.allowed {
			r.admitted++
		}
		d := lim.Allow(keys[s.key], r.at[i], 1)
		own := d
		settled := agrees(d, s)
		// Within a millisecond of its boundary: the request a millisecond later or
		// earlier. Or one or two of it and the key's requests before it (their updates)
		// were a millisecond apart from the rest on the server's clock: move them, with
		// those beside them in their logged millisecond, if everything from the first
		// one moved to this one then agrees.
		for _, shift := range []int64{ms, -ms} {
			if settled {
				break
			}
			if trial, last := decideAt(r.at, i, shift); agrees(last, s) {
				lim, settled, d = trial, true, last
				r.at[i] += shift
				r.boundary++
			}
		}
		near := append([]int{i}, sameKey(i)...)
		for a := 0; a < len(near) && !settled; a++ {
			for b := a; b < len(near) && !settled; b++ {
				for _, dirs := range [][2]int{{1, 1}, {-1, -1}, {1, -1}, {-1, 1}} {
					if settled || (a == b && dirs[0] != dirs[1]) {
						continue
					}
					moved := slices.Clone(r.at)
					move(moved, near[a], dirs[0])
					if b != a {
						move(moved, near[b], dirs[1])
					}
					if trial, ok, last := replayTo(moved, near[b], i); ok {
						lim, settled, r.at, d = trial, true, moved, last
						r.boundary++
					}
				}
			}
		}
		if clockSteps && !settled {
			if step, ok := bestStep(r.at, i); ok {
				for j := i; j < len(r.at); j++ {
					r.at[j] += step
				}
				lim, _, d = replayTo(r.at, i, i)
				settled = true
				r.clockSteps = append(r.clockSteps, fmt.Sprintf("%+d ms at %d ms", step/ms, s.at))
			}
		}
		if !settled {
			// lim goes on from the model's own decision: what follows shows how far off
			// it is.
			r.differ++
			if r.firstDiffer == "" {
				r.firstDiffer = fmt.Sprintf("request %d (key %s at %d ms): server allowed %v (rate read %d), model %+v", i, s.key, s.at, s.allowed, s.rate, own)
			}
			continue
		}
		if !s.allowed {
			continue
		}
		heldCount++
		heldSum += s.held
		modelSum += d.Delay
		if s.delayed != (d.Delay > 0) {
			r.delayDiffer++
			if r.firstDiffer == "" {
				r.firstDiffer = fmt.Sprintf("request %d (key %s at %d ms): server delayed %v (held %v), model delay %v", i, s.key, s.at, s.delayed, s.held, d.Delay)
			}
		}
		if s.delayed {
			r.heldEarly = max(r.heldEarly, d.Delay-s.held)
			r.heldLate = max(r.heldLate, s.held-d.Delay)
		}
	}
	if heldCount > 0 {
		r.heldMeanMS = float64(heldSum) / float64(heldCount) / float64(time.Millisecond)
		r.modelHeldMean = float64(modelSum) / float64(heldCount) / float64(time.Millisecond)
	}
	return r
}

// realRun is one test's sending: a unique prefix for its keys, so that runs against
// the same server never share a key's state, and the plan it sent.
type realRun struct {
	prefix string
	plan   probe.Plan
	// late is how long after it was due the latest request was sent.
	late time.Duration
}

// sendReal sends the traffic of limit.scenario to base+limit.path in real time, its keys
// renamed apart, from the plan's first request on, and checks every request was answered
// 200 or 429. It runs beside the other sendings, so it returns its error.
func sendReal(base string, limit realLimit) (realRun, error) {
	sc, err := scenario.Load(limit.scenario)
	if err != nil {
		return realRun{}, err
	}
	plan, err := probe.FromScenario(sc, sc.SeedOr(scenario.DefaultSeed), 1, 0, 5000)
	if err != nil {
		return realRun{}, err
	}
	// A random prefix (the process's own random source, not a simulation's).
	run := realRun{prefix: fmt.Sprintf("%012x-", rand.Uint64()>>16), plan: plan}
	first := plan.Requests[0].At
	for i := range plan.Requests {
		plan.Requests[i].Key = run.prefix + plan.Requests[i].Key
		plan.Requests[i].At -= first
	}
	for i := range plan.Keys {
		plan.Keys[i] = run.prefix + plan.Keys[i]
	}
	target := probe.Target{URL: base + limit.path, KeyHeader: "X-User", Timeout: 20 * time.Second,
		Concurrency: 256, RefusedCodes: []int{429}}
	xs, err := probe.Run(context.Background(), plan, target, probe.WallClock{}, time.Now().Add(300*time.Millisecond))
	if err != nil {
		return realRun{}, err
	}
	for _, x := range xs {
		if x.Status != 200 && x.Status != 429 {
			return realRun{}, fmt.Errorf("%s: a request got status %d (%s)", limit.path, x.Status, x.Err)
		}
		run.late = max(run.late, x.Sent-x.Due)
	}
	return run, nil
}

// readServed reads the lines of the log at path for run's keys, waiting up to 10 s for
// all of them (a server writes its log line after the response), parsed by parse.
func readServed(t *testing.T, path string, run realRun, parse func([]string) (served, error)) []served {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []served
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 0 || !strings.HasPrefix(fields[len(fields)-1], run.prefix) {
				continue
			}
			s, err := parse(fields)
			if err != nil {
				f.Close()
				t.Fatalf("%s: %q: %v", path, sc.Text(), err)
			}
			out = append(out, s)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if len(out) >= len(run.plan.Requests) || time.Now().After(deadline) {
			if len(out) != len(run.plan.Requests) {
				t.Fatalf("%s: %d lines for %d requests", path, len(out), len(run.plan.Requests))
			}
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parseNginx reads `$msec $request_time $limit_req_status $status $uri $http_x_user`:
// the request arrived at $msec − $request_time, both in milliseconds.
func parseNginx(f []string) (served, error) {
	if len(f) != 6 {
		return served{}, fmt.Errorf("%d fields, want 6", len(f))
	}
	end, err1 := strconv.ParseFloat(f[0], 64)
	took, err2 := strconv.ParseFloat(f[1], 64)
	if err := cmp.Or(err1, err2); err != nil {
		return served{}, err
	}
	endMS, tookMS := int64(math.Round(end*1000)), int64(math.Round(took*1000))
	s := served{at: endMS - tookMS, key: f[5], held: time.Duration(tookMS) * time.Millisecond, rate: 0}
	switch f[2] {
	case "PASSED":
		s.allowed = true
	case "DELAYED":
		s.allowed, s.delayed = true, true
	case "REJECTED":
	default:
		return served{}, fmt.Errorf("limit_req_status %q", f[2])
	}
	if want := map[bool]string{true: "200", false: "429"}[s.allowed]; f[3] != want {
		return served{}, fmt.Errorf("status %s with %s", f[3], f[2])
	}
	if !s.delayed {
		s.held = 0 // a passed request's request time is its own handling, not a hold
	}
	return s, nil
}

// parseHAProxy reads `date(0,ms) status sc_http_req_rate(0) path x-user`.
func parseHAProxy(f []string) (served, error) {
	if len(f) != 5 {
		return served{}, fmt.Errorf("%d fields, want 5", len(f))
	}
	at, err1 := strconv.ParseInt(f[0], 10, 64)
	rate, err2 := strconv.ParseInt(f[2], 10, 64)
	if err := cmp.Or(err1, err2); err != nil {
		return served{}, err
	}
	s := served{at: at, key: f[4], rate: rate}
	switch f[1] {
	case "200":
		s.allowed = true
	case "429":
	default:
		return served{}, fmt.Errorf("status %s", f[1])
	}
	return s, nil
}

// checkReplay holds a replay to the models' promise: every decision reproduced, at most
// 0.5% of them only by a millisecond's move, and no fewer requests than were sent.
func checkReplay(t *testing.T, limit realLimit, run realRun, r replayed) {
	t.Helper()
	if r.differ > 0 || r.delayDiffer > 0 {
		t.Errorf("%s %s: %d decisions the model does not reproduce and %d delays; the first: %s", limit.path, limit.spec, r.differ, r.delayDiffer, r.firstDiffer)
	}
	if len(r.clockSteps) > maxClockSteps {
		t.Errorf("%s %s: HAProxy's clock stepped %d times (%s): more than %d", limit.path, limit.spec, len(r.clockSteps), strings.Join(r.clockSteps, ", "), maxClockSteps)
	}
	if float64(r.boundary) > 0.005*float64(r.requests) {
		t.Errorf("%s %s: %d of %d decisions only within 1 ms of a boundary, above 0.5%%", limit.path, limit.spec, r.boundary, r.requests)
	}
	if r.requests != len(run.plan.Requests) {
		t.Errorf("%s: %d replayed of %d sent", limit.path, r.requests, len(run.plan.Requests))
	}
}

// replayServed runs `rlsim replay` with spec on the arrivals a replay of a server's log
// settled on (r.at, in the log's sorted order), written as a CSV access log (time to the
// millisecond, user = key), and returns what it admitted: the product's model, through
// the command a user runs, on the traffic the server saw.
func replayServed(t *testing.T, spec string, log []served, r replayed, flags ...string) int64 {
	t.Helper()
	var b strings.Builder
	b.WriteString("time,user\n")
	for i, s := range log {
		fmt.Fprintf(&b, "%s,%s\n", time.Unix(0, r.at[i]).UTC().Format("2006-01-02T15:04:05.000Z07:00"), s.key)
	}
	path := filepath.Join(t.TempDir(), "served.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := runJSON(t, append([]string{"replay", path, "--key", "user", "--algorithms", spec, "--out", ""}, flags...)...)
	return rep.Results[0].Admitted
}

// checkBound holds what the server admitted for one key in any window of length span, on
// the milliseconds it logged, to the model's analytic bound over span, the figure rlsim
// worst-case reports: no traffic the tests drive through the real server gets more
// through than the worst case says. It returns the peak.
func checkBound(t *testing.T, spec string, log []served, span time.Duration) int64 {
	t.Helper()
	b, ok := algorithms.BoundOf(spec, algorithms.Policy{Limit: 1, Window: span}, span)
	if !ok {
		t.Fatalf("%s has no bound", spec)
	}
	byKey := map[string][]int64{}
	for _, s := range log {
		if s.allowed {
			byKey[s.key] = append(byKey[s.key], s.at)
		}
	}
	var peak int64
	for key, ats := range byKey {
		slices.Sort(ats)
		first, keyPeak := 0, int64(0)
		for i, at := range ats {
			for ats[first] <= at-span.Milliseconds() {
				first++
			}
			keyPeak = max(keyPeak, int64(i-first+1))
		}
		if keyPeak > b.MaxAdmitted() {
			t.Errorf("%s: key %s: %d admitted in a window of %v, above the bound %v (%s)", spec, key, keyPeak, span, b.Value, b.Formula)
		}
		peak = max(peak, keyPeak)
	}
	return peak
}

// TestModelsReproduceRealServers sends rlsim's traffic through every nginx location and
// HAProxy path .ci/run configures, all at once (the token-burst scenario's 1836 requests
// over 65 s, the others' 535 over 17 s), reads the server's own decision for every
// request from its log, and requires the model to reproduce each one (see replayLog), and
// rlsim replay on the arrivals the server logged to admit what it admitted, give or take
// the boundary cases. It skips a server whose URL and log are not set.
//
// nginx: the model must delay exactly the requests nginx delayed, never by more than 2 ms
// longer than nginx held them, and by as long on average within 50 ms (nginx's timers
// fire late on a busy machine, never early); rlsim compare on the token-burst scenario
// itself must admit what nginx admitted within 0.5% when every request was sent within
// maxLate of its time.
//
// HAProxy: the model must also read the rate HAProxy read for every admitted request.
// The test logs what the two-counter sliding window admits on the same arrivals at as
// many per period as HAProxy admits in one (N for gt N, N − 1 for ge N): HAProxy's
// counting of refused requests takes it far below.
func TestModelsReproduceRealServers(t *testing.T) {
	type job struct {
		server string
		limit  realLimit
		base   string
		log    string
		run    realRun
		err    error
	}
	var jobs []*job
	for _, server := range []struct {
		name, urlVar, logVar string
		limits               []realLimit
	}{
		{"nginx", "RLSIM_NGINX_URL", "RLSIM_NGINX_LOG", nginxLimits},
		{"haproxy", "RLSIM_HAPROXY_URL", "RLSIM_HAPROXY_LOG", haproxyLimits},
	} {
		base, log := os.Getenv(server.urlVar), os.Getenv(server.logVar)
		if base == "" || log == "" {
			t.Logf("%s and %s not set: %s skipped (.ci/run starts it and sets them)", server.urlVar, server.logVar, server.name)
			continue
		}
		for _, l := range server.limits {
			jobs = append(jobs, &job{server: server.name, limit: l, base: strings.TrimSuffix(base, "/"), log: log})
		}
	}
	if len(jobs) == 0 {
		t.Skip("no real server (.ci/run starts nginx and HAProxy and sets RLSIM_NGINX_URL, RLSIM_NGINX_LOG, RLSIM_HAPROXY_URL and RLSIM_HAPROXY_LOG)")
	}
	t.Parallel()
	if phase, ok := clockPhase(os.Getenv("RLSIM_NGINX_PID")); ok {
		// A monotonic clock whose milliseconds begin far from the wall clock's puts more
		// requests on a boundary (see replayLog): the figure explains their count.
		// .ci/run starts nginx with the two 1 µs apart (.ci/aligned-clock).
		t.Logf("nginx's monotonic − wall clock: %v modulo 1 ms", phase)
	}
	// Every sending at once, so that the whole test takes as long as the longest.
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.run, j.err = sendReal(j.base, j.limit)
		}()
	}
	wg.Wait()
	for _, j := range jobs {
		t.Run(j.server+strings.TrimSuffix(j.limit.path, "/"), func(t *testing.T) {
			if j.err != nil {
				t.Fatal(j.err)
			}
			limit := j.limit
			if j.server == "haproxy" {
				checkHAProxy(t, limit, j.run, readServed(t, j.log, j.run, parseHAProxy))
				return
			}
			log := readServed(t, j.log, j.run, parseNginx)
			r := replayLog(t, limit.spec, log, -1, false)
			replayed := replayServed(t, limit.spec, log, r)
			t.Logf("nginx %s %q: %d requests, nginx admitted %d, rlsim replay of its arrivals %d; the model reproduces %d decisions, %d of them only within 1 ms of a boundary, and not %d; nginx held admitted requests %.1f ms on average, the model delays them %.1f ms, nginx at most %v sooner and %v later",
				limit.path, limit.spec, r.requests, r.admitted, replayed, r.requests-r.differ, r.boundary, r.differ, r.heldMeanMS, r.modelHeldMean, r.heldEarly, r.heldLate)
			checkReplay(t, limit, j.run, r)
			// nginx's log is on its wall clock, up to a millisecond off the clock it
			// decides by: the bound over one more millisecond.
			peak := checkBound(t, limit.spec, log, time.Second+time.Millisecond)
			t.Logf("nginx %s: at most %d admitted for one key in a second", limit.path, peak)
			if gap := replayed - int64(r.admitted); max(gap, -gap) > int64(r.differ) {
				t.Errorf("rlsim replay admits %d, nginx %d", replayed, r.admitted)
			}
			if r.heldEarly > 2*time.Millisecond || r.heldMeanMS-r.modelHeldMean > 50 || r.modelHeldMean-r.heldMeanMS > 2 {
				t.Errorf("nginx held requests %.1f ms on average, up to %v sooner than the model's delay; the model %.1f ms", r.heldMeanMS, r.heldEarly, r.modelHeldMean)
			}
			if limit.scenario == "token-burst" {
				sim := compareJSON(t, "--scenario", "token-burst", "--algorithms", limit.spec).Results[0]
				t.Logf("rlsim compare --scenario token-burst --algorithms %q admits %d of %d; nginx admitted %d of %d, every request sent within %v of its time",
					limit.spec, sim.Admitted, sim.Requests, r.admitted, r.requests, j.run.late)
				// A request sent late moves an admission; a stall of the sender moves many.
				if gap := sim.Admitted - int64(r.admitted); j.run.late <= maxLate && float64(max(gap, -gap)) > 0.005*float64(r.requests) {
					t.Errorf("compare admits %d, nginx %d", sim.Admitted, r.admitted)
				}
			}
		})
	}
}

// maxLate is the latest a request of the token-burst traffic may be sent for rlsim
// compare on the scenario's own times to be held to what nginx admitted: beyond it
// the machine held the sender up, and the traffic nginx saw is not the scenario's.
const maxLate = 500 * time.Millisecond

// checkHAProxy is TestModelsReproduceRealServers for one HAProxy path.
func checkHAProxy(t *testing.T, limit realLimit, run realRun, log []served) {
	t.Helper()
	pass, period := haproxyPass(t, limit.spec)
	r := replayLog(t, limit.spec, log, pass, true)
	replayed := replayServed(t, limit.spec, log, r)
	sliding := replayServed(t, "sliding-window", log, r, "--limit", strconv.FormatInt(pass, 10), "--window", period)
	t.Logf("haproxy %s %q: %d requests, HAProxy admitted %d, rlsim replay of its arrivals %d (the sliding window at %d per %s: %d); the model reproduces %d decisions, %d of them only within 1 ms of a boundary, and not %d; HAProxy's clock stepped %d times %v",
		limit.path, limit.spec, r.requests, r.admitted, replayed, pass, period, sliding, r.requests-r.differ, r.boundary, r.differ, len(r.clockSteps), r.clockSteps)
	checkReplay(t, limit, run, r)
	d, err := time.ParseDuration(period)
	if err != nil {
		t.Fatal(err)
	}
	peak := checkBound(t, limit.spec, log, d)
	t.Logf("haproxy %s: at most %d admitted for one key in a window of %s", limit.path, peak, period)
	if gap := replayed - int64(r.admitted); max(gap, -gap) > int64(r.differ) {
		t.Errorf("rlsim replay admits %d, HAProxy %d", replayed, r.admitted)
	}
}

// haproxyPass returns N for gt N and N − 1 for ge N, what an admitted request's
// Remaining counts down from, and the period.
func haproxyPass(t *testing.T, spec string) (pass int64, period string) {
	pass = -1
	for _, f := range strings.Fields(strings.TrimPrefix(spec, "haproxy:")) {
		op, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case op == "period":
			period = v
		case op == "gt" && err == nil:
			pass = n
		case op == "ge" && err == nil:
			pass = n - 1
		}
	}
	if pass < 0 || period == "" {
		t.Fatalf("%s: no period, or no gt or ge", spec)
	}
	return pass, period
}

// serverLog is a server's log made by the model itself: it decides requests at random
// times on two keys (bursts and gaps) by its own clock, serverClock(t), and the log
// gives each the millisecond of logClock(t), as a server logs its wall clock.
func serverLog(t *testing.T, spec string, seed uint64, serverClock, logClock func(int64) int64) []served {
	t.Helper()
	lim, err := algorithms.New(spec, algorithms.Policy{Limit: 1, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 9))
	now := int64(1_800_000_000) * int64(time.Second)
	var log []served
	for range 1500 {
		if rng.IntN(5) > 0 {
			now += rng.Int64N(int64(60 * time.Millisecond))
		}
		key := uint32(rng.IntN(2))
		d := lim.Allow(key, serverClock(now), 1)
		log = append(log, served{at: logClock(now) / int64(time.Millisecond), key: fmt.Sprint("k", key), allowed: d.Allowed,
			delayed: d.Delay > 0, held: d.Delay, rate: 0})
		if strings.HasPrefix(spec, "haproxy:") && d.Allowed {
			p, _ := haproxyPass(t, spec)
			log[len(log)-1].rate = p - d.Remaining
		}
	}
	return log
}

// TestReplayLogFollowsTheServer holds replayLog, which the proof against the real
// servers rests on, to what it claims on logs the model itself wrote: a server whose
// clock falls on other millisecond boundaries than its log's (0.05, 0.4 and 0.95 ms
// apart) is reproduced with at most a few boundary cases; a log with one decision flipped is not;
// a HAProxy clock that steps 300 ms behind its log's date halfway is found as one step,
// and without clock steps it is a difference.
func TestReplayLogFollowsTheServer(t *testing.T) {
	wall := func(t int64) int64 { return t }
	for _, c := range []struct {
		spec  string
		phase time.Duration
	}{
		{"nginx:rate=10r/s burst=3", 400 * time.Microsecond},
		{"nginx:rate=10r/s burst=20", 950 * time.Microsecond},
		{"nginx:rate=10r/s burst=20", 50 * time.Microsecond},
		{"nginx:rate=10r/s burst=5 nodelay + rate=2r/s burst=4", 400 * time.Microsecond},
		{"haproxy:period=1s gt=27", 400 * time.Microsecond},
	} {
		spec := c.spec
		pass := int64(-1)
		if strings.HasPrefix(spec, "haproxy") {
			pass, _ = haproxyPass(t, spec)
		}
		log := serverLog(t, spec, 1, func(t int64) int64 { return t + int64(c.phase) }, wall)
		r := replayLog(t, spec, slices.Clone(log), pass, false)
		t.Logf("%s, clocks %v apart: %d requests, %d admitted, %d boundary cases", spec, c.phase, r.requests, r.admitted, r.boundary)
		if r.differ != 0 || r.delayDiffer != 0 || float64(r.boundary) > 0.02*float64(r.requests) || r.admitted == 0 || r.admitted == r.requests {
			t.Errorf("%s: %d differences (%s), %d delays, %d boundary cases, %d of %d admitted", spec, r.differ, r.firstDiffer, r.delayDiffer, r.boundary, r.admitted, r.requests)
		}
		flipped := slices.Clone(log)
		flipped[700].allowed = !flipped[700].allowed
		if r := replayLog(t, spec, flipped, pass, false); r.differ == 0 {
			t.Errorf("%s: a flipped decision went unnoticed", spec)
		}
	}
	half := int64(1_800_000_000)*int64(time.Second) + 20*int64(time.Second)
	behind := func(t int64) int64 {
		if t >= half {
			return t - 300*int64(time.Millisecond)
		}
		return t
	}
	spec := "haproxy:period=1s gt=27"
	pass, _ := haproxyPass(t, spec)
	log := serverLog(t, spec, 2, behind, wall)
	if r := replayLog(t, spec, slices.Clone(log), pass, true); r.differ != 0 || len(r.clockSteps) != 1 || !strings.HasPrefix(r.clockSteps[0], "-30") {
		t.Errorf("a step of 300 ms: %d differences, steps %v", r.differ, r.clockSteps)
	}
	if r := replayLog(t, spec, slices.Clone(log), pass, false); r.differ == 0 {
		t.Error("without clock steps, a step of 300 ms went unnoticed")
	}
}

// identifyTraffic is the traffic probe --identify is proven with: a burst on a fresh key,
// a stream above the rate, sparse requests after a burst, bursts 5.2 s apart and Poisson
// keys, over 25 s (963 requests).
var identifyTraffic = filepath.Join("testdata", "probe-identify.yaml")

// renamedScenario writes identifyTraffic to a temporary file with every key given
// prefix, so that runs against the same server never share a key's state (HAProxy keeps
// a key's counter for a minute), and returns its path.
func renamedScenario(t *testing.T, prefix string) string {
	t.Helper()
	data, err := os.ReadFile(identifyTraffic)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, k := range []string{"key: burst}", "key: stream}", "key: sparse}", "key: double}", "key_prefix: user_"} {
		name, value, _ := strings.Cut(k, ": ")
		text = strings.ReplaceAll(text, k, name+": "+prefix+value)
	}
	if n := strings.Count(text, prefix); n != 9 {
		t.Fatalf("%s: renamed %d keys, want the 9 the file has", identifyTraffic, n)
	}
	path := filepath.Join(t.TempDir(), "probe-identify.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProbeModelAndIdentifyOnRealServers probes the real nginx (burst=20 with and without
// nodelay) and HAProxy (20 per 10 s, and 5 per second with ge) that .ci/run starts with
// --model (their own configuration) and --identify: the model must agree on 99.5% of
// the decisions for nginx and 99% for HAProxy (differences within the jitter measured
// counted), and --identify must name the configuration itself first with 99% or more;
// `rlsim identify` on the probe's decisions file must name it too, and on nginx's own log
// of the same requests.
func TestProbeModelAndIdentifyOnRealServers(t *testing.T) {
	nginxURL, haproxyURL := os.Getenv("RLSIM_NGINX_URL"), os.Getenv("RLSIM_HAPROXY_URL")
	if nginxURL == "" && haproxyURL == "" {
		t.Skip("RLSIM_NGINX_URL and RLSIM_HAPROXY_URL not set (.ci/run starts nginx and HAProxy and sets them)")
	}
	type target struct {
		name, url, path, spec string
		// named is what --identify must name: the spec, or for HAProxy's ge N the gt
		// N − 1 that decides alike.
		named string
		least float64
	}
	var targets []target
	if nginxURL != "" {
		targets = append(targets,
			target{"nginx", nginxURL, "/bn/", "nginx:rate=10r/s burst=20 nodelay", "nginx:rate=10r/s burst=20 nodelay", 0.995},
			target{"nginx", nginxURL, "/b/", "nginx:rate=10r/s burst=20", "nginx:rate=10r/s burst=20", 0.995})
	}
	if haproxyURL != "" {
		targets = append(targets,
			target{"haproxy", haproxyURL, "/gt20-10s/", "haproxy:period=10s gt=20", "haproxy:period=10s gt=20", 0.99},
			target{"haproxy", haproxyURL, "/ge5-1s/", "haproxy:period=1s ge=5", "haproxy:period=1s gt=4", 0.99})
	}
	for _, tg := range targets {
		t.Run(tg.name+strings.TrimSuffix(tg.path, "/"), func(t *testing.T) {
			t.Parallel()
			prefix := fmt.Sprintf("%012x-", rand.Uint64()>>16)
			decisions := filepath.Join(t.TempDir(), "decisions.csv")
			rep := probeJSON(t, strings.TrimSuffix(tg.url, "/")+tg.path, "--scenario", renamedScenario(t, prefix), "--key-header", "X-User",
				"--model", tg.spec, "--identify", "--decisions", decisions)
			r := rep.Results[0]
			if r.Other != 0 || r.ModelAgreement == nil || len(r.Identified) == 0 {
				t.Fatalf("%+v", r)
			}
			t.Logf("%s %s: --model %s agrees on %.2f%% of %d decisions (%d within jitter ±%.2f ms, %d real differences); sent up to %.1f ms late; promise %s",
				tg.name, tg.path, r.Model, 100**r.ModelAgreement, r.Requests, *r.ModelWithinJitter, r.Promise.JitterMS, *r.ModelDifferences,
				r.LateMSMax, r.Promise.Verdict)
			for _, c := range r.Identified {
				t.Logf("  identified %s: %d + %d within jitter of %d (%.2f%%)", c.Model, c.Agreed, c.WithinJitter, c.Decisions, 100*c.Agreement)
			}
			if *r.ModelAgreement < tg.least {
				t.Errorf("--model %s agrees on %.2f%%, want at least %.1f%%: %+v", tg.spec, 100**r.ModelAgreement, 100*tg.least, r.ModelDiffering)
			}
			if best := r.Identified[0]; best.Model != tg.named || best.Agreement < 0.99 {
				t.Errorf("--identify names %s (%.2f%%), want %s with 99%% or more", best.Model, 100*best.Agreement, tg.named)
			}
			out, errOut, code := rlsim(t, "identify", decisions, "--format", "json")
			var offline identifyReport
			if code != 0 || json.Unmarshal([]byte(out), &offline) != nil {
				t.Fatalf("identify %s: exit %d: %s%s", decisions, code, errOut, out)
			}
			if best := offline.Identified[0]; best.Model != tg.named || best.Agreement < 0.99 || offline.Decisions != int(r.Requests) {
				t.Errorf("identify %s names %s (%.2f%% of %d), want %s", decisions, best.Model, 100*best.Agreement, offline.Decisions, tg.named)
			}
			if tg.name == "nginx" && tg.path == "/bn/" && os.Getenv("RLSIM_NGINX_LOG") != "" {
				checkIdentifyNginxLog(t, prefix, tg.named, int(r.Requests))
			}
		})
	}
}

// checkIdentifyNginxLog runs `rlsim identify` on nginx's own log of the requests whose
// keys start with prefix: arrivals on nginx's clock, no send times, so no delays seen
// (nodelay is what a log of admissions looks like).
func checkIdentifyNginxLog(t *testing.T, prefix, named string, requests int) {
	t.Helper()
	lines := readServedLines(t, os.Getenv("RLSIM_NGINX_LOG"), prefix, requests)
	path := filepath.Join(t.TempDir(), "limits.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := rlsim(t, "identify", path, "--format", "json", "--key-var", "http_x_user",
		"--nginx-log-format", "$msec $request_time $limit_req_status $status $uri $http_x_user")
	var rep identifyReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("identify %s: exit %d: %s%s", path, code, errOut, out)
	}
	best := rep.Identified[0]
	t.Logf("identify on nginx's log: %s, %d + %d within jitter of %d", best.Model, best.Agreed, best.WithinJitter, best.Decisions)
	if best.Model != named || best.Agreement < 0.99 || rep.Decisions != requests {
		t.Errorf("identify on nginx's log names %s (%.2f%% of %d), want %s", best.Model, 100*best.Agreement, rep.Decisions, named)
	}
}

// readServedLines returns the lines of the log at path whose last field starts with
// prefix, waiting up to 10 s for want of them.
func readServedLines(t *testing.T, path, prefix string, want int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[len(f)-1], prefix) {
				lines = append(lines, line)
			}
		}
		if len(lines) >= want || time.Now().After(deadline) {
			if len(lines) != want {
				t.Fatalf("%s: %d lines for %d requests", path, len(lines), want)
			}
			return lines
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestProbeVerdictIsStableOnNginx runs the README's probe of nginx (rate=10r/s, no burst,
// keyed by address; probe-drip: two clients at 30 a second for two seconds) five times:
// every run must give the same verdict. nginx lets one request through when 100 ms of
// its millisecond clock have passed since the last, and the clients send every 33.3 ms,
// so the gap between admissions is 100 ms or 133 ms as sends fall a hair late or early:
// the eleventh admission of a second lands on the window's edge in some runs and not in
// others. Judged on the times sent, that read kept one run and ✗1.10 the next; judged on
// arrivals known to within the jitter, it is kept every time, within jitter by a request
// in the runs that reach the edge, and never broke.
func TestProbeVerdictIsStableOnNginx(t *testing.T) {
	base := os.Getenv("RLSIM_NGINX_URL")
	if base == "" {
		t.Skip("RLSIM_NGINX_URL not set (.ci/run starts nginx and sets it)")
	}
	drip := filepath.Join("testdata", "probe-drip.yaml")
	var verdicts []string
	for run := range 5 {
		rep := probeJSON(t, strings.TrimSuffix(base, "/")+"/ip/", "--scenario", drip, "--key-addr")
		r := rep.Results[0]
		p := r.Promise
		t.Logf("run %d: %s, %d within jitter (%d surely in a window, %d on the estimates, %d at most; jitter ±%.2f ms); over_admission on send times %.2f; false rejects in arrival order %d, %d more within jitter",
			run+1, p.Verdict, p.Uncertain, p.PeakSure, p.Peak, p.PeakMay, p.JitterMS, r.OverAdmission, p.FalseRejects, p.FalseRejectsWithinJitter)
		if r.Requests != 120 || r.Other != 0 {
			t.Fatalf("run %d: %+v", run+1, r)
		}
		verdicts = append(verdicts, p.Verdict)
	}
	for _, v := range verdicts {
		if v != probe.Kept {
			t.Fatalf("verdicts run to run: %v, want kept every time (nginx admits at most 10 in a second of its clock)", verdicts)
		}
	}
}
