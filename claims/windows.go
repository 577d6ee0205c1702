package claims

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// The notes' sections, in English, as the claims cite them.
const (
	secIntro      = "Introduction"
	secAlgorithms = "Four algorithms and their trade-offs"
	secBoundary   = "The fixed window's boundary problem, in numbers"
	secBucket     = "Token bucket: why allowing bursts suits APIs"
	secDistrib    = "Distributed implementation: atomic operations and the error of local limits"
	secKeys       = "What to key on"
	secClients    = "429 and client retries"
	secConclusion = "Conclusion: what to decide before the algorithm"
)

// boundaryArgs is the boundary burst at 100/min under the fixed window and the two
// counters, with its decisions: several claims read it.
var boundaryArgs = []string{"compare", "--scenario", "boundary-burst", "--algorithms", "fixed-window,sliding-window", "--decisions", "decisions.csv"}

// floodArgs is flood-one-key (one key at 20 per second against 100 per minute for five
// minutes) under the fixed window, the exact log, the two counters and the notes' script.
var floodArgs = []string{"compare", "--scenario", "flood-one-key", "--algorithms", "fixed-window,sliding-log,sliding-window,notes-sliding-window"}

// timedArgs is a client that times its requests against the two-counter window, the
// notes' own script and the exact log.
var timedArgs = []string{"compare", "--scenario", "two-counter-timed", "--algorithms", "sliding-window,notes-sliding-window,sliding-log"}

// boundarySpan is how close together the notes say the two hundred passed.
const boundarySpan = 200 * time.Millisecond

// boundaryBurst is what the fixed window did with a boundary burst of 2L: L just before a
// minute, L just after.
type boundaryBurst struct {
	limit, requests, admitted, peak, falseAllow, backendPeak int64
	first, last                                              time.Duration // first and last admission
}

// Judge: holds when the fixed window admitted all 2L, they fall within boundarySpan, and
// one trailing window held all of them (2L); otherwise it does not hold.
func (m boundaryBurst) Judge() Judgement {
	if m.admitted == 2*m.limit && m.peak == 2*m.limit && m.last-m.first <= boundarySpan {
		return Judgement{Holds, fmt.Sprintf("a burst of %d on each side of a window edge, each window's own count never above %d", m.limit, m.limit)}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("the fixed window admitted %d where the notes expect %d within %s", m.admitted, 2*m.limit, boundarySpan)}
}

func (m boundaryBurst) Text() string {
	return fmt.Sprintf("fixed-window, %d/min: admitted %d of %d between %s and %s (%s); %d in one trailing window = %.2f× the limit, "+
		"the backend saw %d in one second; the exact rule counts %d of them as false allows, while each aligned window's counter stopped at %d — the algorithm did what it is defined to do",
		m.limit, m.admitted, m.requests, clock(m.first), clock(m.last), m.last-m.first, m.peak, float64(m.peak)/float64(m.limit),
		m.backendPeak, m.falseAllow, m.limit)
}

// measureBoundary runs a boundary scenario with its decisions and reads the fixed window.
func measureBoundary(s *session, args []string) (boundaryBurst, error) {
	rep, ev, err := s.report(args...)
	if err != nil {
		return boundaryBurst{}, err
	}
	x, err := result(rep, algorithms.FixedWindowName)
	if err != nil {
		return boundaryBurst{}, err
	}
	ds, err := s.decisions(args...)
	if err != nil {
		return boundaryBurst{}, err
	}
	m := boundaryBurst{limit: rep.Policy.Limit, requests: x.Requests, admitted: x.Admitted, peak: x.PeakWindowAdmitted,
		falseAllow: x.FalseAllow, backendPeak: x.BackendPeak, first: -1}
	for _, d := range ds {
		if d.algorithm == algorithms.FixedWindowName && d.allowed {
			if m.first < 0 {
				m.first = d.at
			}
			m.last = d.at
		}
	}
	if m.first < 0 {
		m.first = 0
	}
	ev.cite(algorithms.FixedWindowName, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(x.PeakWindowAdmitted), cellRatio(x.OverAdmission))
	return m, nil
}

// windowCeiling is the most a fixed window admitted in one trailing window: by search and
// on traffic.
type windowCeiling struct {
	limit     int64
	found     int64   // the worst-case search's most in one window of W
	bound     float64 // its analytic bound, L·(⌈T/W⌉+1)
	scenarios []namedPeak
}

type namedPeak struct {
	name string
	peak int64
}

// Judge: does not hold when anything put more than 2L in one window; holds when the
// search reached 2L; holds with a caveat when no traffic reached it.
func (m windowCeiling) Judge() Judgement {
	top := m.found
	for _, p := range m.scenarios {
		top = max(top, p.peak)
	}
	switch {
	case top > 2*m.limit:
		return Judgement{DoesNotHold, fmt.Sprintf("%d admitted in one window, above 2L = %d", top, 2*m.limit)}
	case m.found == 2*m.limit:
		return Judgement{Holds, "2× is reached only by bursts on both sides of a window edge"}
	}
	return Judgement{HoldsWithCaveat, fmt.Sprintf("the search found at most %d in one window, not the 2L = %d the bound allows", top, 2*m.limit)}
}

func (m windowCeiling) Text() string {
	var parts []string
	for _, p := range m.scenarios {
		parts = append(parts, fmt.Sprintf("%s %d (%.2f×)", p.name, p.peak, float64(p.peak)/float64(m.limit)))
	}
	return fmt.Sprintf("the worst-case search finds at most %d in one trailing window of a fixed window of %d per minute, its analytic bound L·(⌈T/W⌉+1) being %g; on traffic: %s",
		m.found, m.limit, m.bound, strings.Join(parts, ", "))
}

func measureWindowCeiling(s *session) (Measurement, error) {
	w, ev, err := s.worstCase("worst-case", "--algorithms", algorithms.FixedWindowName)
	if err != nil {
		return nil, err
	}
	if len(w.Results) != 1 {
		return nil, fmt.Errorf("worst-case: %d results", len(w.Results))
	}
	r := w.Results[0]
	ev.cite(algorithms.FixedWindowName, formatBound(r.Bound, r.BoundReached), cellInt(r.WorstAdmitted))
	m := windowCeiling{found: r.WorstAdmitted, bound: r.Bound}
	for _, args := range [][]string{boundaryArgs, floodArgs} {
		rep, ev, err := s.report(args...)
		if err != nil {
			return nil, err
		}
		x, err := result(rep, algorithms.FixedWindowName)
		if err != nil {
			return nil, err
		}
		m.limit = rep.Policy.Limit
		m.scenarios = append(m.scenarios, namedPeak{rep.Scenario, x.PeakWindowAdmitted})
		ev.cite(algorithms.FixedWindowName, cellInt(x.PeakWindowAdmitted), cellRatio(x.OverAdmission))
	}
	return m, nil
}

// formatBound prints an analytic bound as the worst-case table does: "<" before a bound
// that is approached but never reached.
func formatBound(v float64, reached bool) string {
	s := strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	if !reached {
		return "<" + s
	}
	return s
}

// shorterWindow compares the fixed window at 100/min and at 2/s on the boundary burst, and
// on page loads at the same average rate per minute and per second.
type shorterWindow struct {
	minuteOver, secondOver   int64   // admitted above the limit in one trailing window
	minuteRatio, secondRatio float64 // over_admission
	brokenMinute             float64 // broken page loads under L per minute
	brokenSecond             float64 // … under L/60 per second
	pageLimitMinute          int64
	pageLimitSecond          int64
}

// burstHarm is how many more page loads (a share of all) a shorter window must break
// before "it also refuses normal bursts" counts as shown: five in a hundred.
const burstHarm = 0.05

// Judge: holds when the overshoot is smaller in absolute terms and the shorter window
// breaks burstHarm more page loads; holds with a caveat when only the first is shown;
// does not hold when the overshoot did not shrink.
func (m shorterWindow) Judge() Judgement {
	shrinks := m.secondOver < m.minuteOver
	cuts := m.brokenSecond-m.brokenMinute >= burstHarm
	switch {
	case shrinks && cuts:
		return Judgement{Holds, fmt.Sprintf("the overshoot stays %.2f× the limit: only its size in requests shrinks", m.secondRatio)}
	case shrinks:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("the shorter window broke only %s more page loads here", pct(m.brokenSecond-m.brokenMinute))}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("the overshoot at the shorter window is %d, not below %d", m.secondOver, m.minuteOver)}
}

func (m shorterWindow) Text() string {
	return fmt.Sprintf("fixed-window boundary overshoot: %d requests above the limit at 100/min (%.2f×), %d at 2/s (%.2f×); "+
		"page loads that fan out to 8 calls: %s broken at %d per minute, %s at %d per second (the same average rate)",
		m.minuteOver, m.minuteRatio, m.secondOver, m.secondRatio, pct(m.brokenMinute), m.pageLimitMinute, pct(m.brokenSecond), m.pageLimitSecond)
}

func measureShorterWindow(s *session) (Measurement, error) {
	var m shorterWindow
	over := func(args []string) (int64, float64, error) {
		rep, ev, err := s.report(args...)
		if err != nil {
			return 0, 0, err
		}
		x, err := result(rep, algorithms.FixedWindowName)
		if err != nil {
			return 0, 0, err
		}
		ev.cite(algorithms.FixedWindowName, cellInt(x.PeakWindowAdmitted), cellRatio(x.OverAdmission))
		return x.PeakWindowAdmitted - rep.Policy.Limit, x.OverAdmission, nil
	}
	var err error
	if m.minuteOver, m.minuteRatio, err = over(boundaryArgs); err != nil {
		return nil, err
	}
	if m.secondOver, m.secondRatio, err = over([]string{"compare", "--scenario", "boundary-per-second", "--algorithms", algorithms.FixedWindowName}); err != nil {
		return nil, err
	}
	broken := func(args []string) (float64, int64, error) {
		rep, ev, err := s.report(args...)
		if err != nil {
			return 0, 0, err
		}
		x, err := result(rep, algorithms.FixedWindowName)
		if err != nil {
			return 0, 0, err
		}
		if x.BrokenPageLoads == nil {
			return 0, 0, fmt.Errorf("%s: no page loads measured", rep.Scenario)
		}
		ev.cite(algorithms.FixedWindowName, cellInt(x.Requests), report.Percent(*x.BrokenPageLoads))
		return *x.BrokenPageLoads, rep.Policy.Limit, nil
	}
	if m.brokenMinute, m.pageLimitMinute, err = broken([]string{"compare", "--scenario", "page-load", "--algorithms", algorithms.FixedWindowName, "--limit", "600", "--window", "1m"}); err != nil {
		return nil, err
	}
	if m.brokenSecond, m.pageLimitSecond, err = broken(pageLoadArgs); err != nil {
		return nil, err
	}
	return m, nil
}

// pageLoadArgs is page-load as the scenario says (10 per second, burst 20) under a strict
// window, the fixed window, the two counters and the token bucket.
var pageLoadArgs = []string{"compare", "--scenario", "page-load", "--algorithms", "sliding-log,fixed-window,sliding-window,token-bucket"}

// slidingEstimate is what the two counters did at 10:01:15 of the notes' example.
type slidingEstimate struct {
	limit          int64
	prev, curr     int64   // admitted in the 10:00 window and in the 10:01 window before 10:01:15
	elapsed        float64 // fraction of the 10:01 window elapsed at 10:01:15
	sent           int64   // requests at 10:01:15
	admitted       map[string]int64
	algorithmOrder []string
}

// estimateAt is the instant of the notes' example, 10:01:15 on the default epoch.
const estimateAt = 75 * time.Second

// expected is what the estimate leaves room for: ⌈L − (prev·(1 − elapsed) + curr)⌉.
func (m slidingEstimate) expected() int64 {
	return int64(math.Ceil(float64(m.limit) - (float64(m.prev)*(1-m.elapsed) + float64(m.curr))))
}

// Judge: holds when every algorithm admitted exactly the room the estimate leaves (5, from
// 100·0.75 + 20 = 95); holds with a caveat when only some did; otherwise does not hold.
func (m slidingEstimate) Judge() Judgement {
	var right, wrong []string
	for _, a := range m.algorithmOrder {
		if m.admitted[a] == m.expected() {
			right = append(right, a)
		} else {
			wrong = append(wrong, fmt.Sprintf("%s admitted %d", a, m.admitted[a]))
		}
	}
	switch {
	case len(wrong) == 0:
		return Judgement{Holds, "the notes' script and rlsim's window agree on whole estimates"}
	case len(right) > 0:
		return Judgement{HoldsWithCaveat, strings.Join(wrong, ", ")}
	}
	return Judgement{DoesNotHold, strings.Join(wrong, ", ")}
}

func (m slidingEstimate) Text() string {
	var parts []string
	for _, a := range m.algorithmOrder {
		parts = append(parts, fmt.Sprintf("%s %d", a, m.admitted[a]))
	}
	est := float64(m.prev)*(1-m.elapsed) + float64(m.curr)
	return fmt.Sprintf("previous window %d, current %d, %.0f%% elapsed at %s: estimate %g, room for %d; of %d requests then, admitted: %s",
		m.prev, m.curr, m.elapsed*100, clock(estimateAt), est, m.expected(), m.sent, strings.Join(parts, ", "))
}

func measureSlidingEstimate(s *session) (Measurement, error) {
	args := []string{"compare", "--scenario", "sliding-estimate", "--algorithms", "sliding-window,notes-sliding-window", "--decisions", "decisions.csv"}
	rep, ev, err := s.report(args...)
	if err != nil {
		return nil, err
	}
	ds, err := s.decisions(args...)
	if err != nil {
		return nil, err
	}
	w := time.Duration(rep.Policy.Window)
	windowStart := estimateAt.Truncate(w)
	m := slidingEstimate{limit: rep.Policy.Limit, elapsed: float64(estimateAt-windowStart) / float64(w),
		admitted: map[string]int64{}, algorithmOrder: []string{algorithms.SlidingWindowName, algorithms.NotesSlidingWindowName}}
	for _, d := range ds {
		switch {
		case d.at == estimateAt:
			if d.algorithm == algorithms.SlidingWindowName {
				m.sent++
			}
			if d.allowed {
				m.admitted[d.algorithm]++
			}
		case d.algorithm != algorithms.SlidingWindowName || !d.allowed: // the counts before, from one algorithm
		case d.at >= windowStart-w && d.at < windowStart:
			m.prev++
		case d.at >= windowStart && d.at < estimateAt:
			m.curr++
		}
	}
	for _, a := range m.algorithmOrder {
		x, err := result(rep, a)
		if err != nil {
			return nil, err
		}
		ev.cite(a, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected))
	}
	return m, nil
}

// timedClient is what a client that times its requests got past the two counters.
type timedClient struct {
	limit                int64
	window, notes, exact int64 // peak in one trailing window: sliding-window, the notes' script, the log
	found                int64 // the worst-case search's most through the two counters
}

// timedLarge is an over-admission no longer "a small error": half the limit again.
const timedLarge = 1.5

// nearlyExact is an over-admission within the error the notes call small.
const nearlyExact = 1.05

// Judge on the two counters' peak over the limit: does not hold from timedLarge up; holds
// with a caveat above nearlyExact; holds up to it.
func (m timedClient) Judge() Judgement {
	over := float64(m.window) / float64(m.limit)
	switch {
	case over >= timedLarge:
		return Judgement{DoesNotHold, fmt.Sprintf("a client that times its requests gets %.2f× the limit through", over)}
	case over > nearlyExact:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("the timed client gets %.2f× the limit through", over)}
	}
	return Judgement{Holds, ""}
}

func (m timedClient) Text() string {
	return fmt.Sprintf("a client sends %d just before the end of one window and %d at the end of the next, inside one trailing minute: "+
		"the two counters admit %d in that minute, the notes' script %d, the exact log %d; the worst-case search gets %d through the two counters",
		m.limit, m.limit, m.window, m.notes, m.exact, m.found)
}

func measureTimedClient(s *session) (Measurement, error) {
	rep, ev, err := s.report(timedArgs...)
	if err != nil {
		return nil, err
	}
	m := timedClient{limit: rep.Policy.Limit}
	for _, p := range []struct {
		alg string
		to  *int64
	}{{algorithms.SlidingWindowName, &m.window}, {algorithms.NotesSlidingWindowName, &m.notes}, {algorithms.SlidingLogName, &m.exact}} {
		x, err := result(rep, p.alg)
		if err != nil {
			return nil, err
		}
		*p.to = x.PeakWindowAdmitted
		ev.cite(p.alg, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(x.PeakWindowAdmitted), cellRatio(x.OverAdmission))
	}
	w, ev, err := s.worstCase("worst-case", "--algorithms", algorithms.SlidingWindowName)
	if err != nil {
		return nil, err
	}
	if len(w.Results) != 1 {
		return nil, fmt.Errorf("worst-case: %d results", len(w.Results))
	}
	m.found = w.Results[0].WorstAdmitted
	ev.cite(algorithms.SlidingWindowName, formatBound(w.Results[0].Bound, w.Results[0].BoundReached), cellInt(m.found))
	return m, nil
}

// errorRegime is the two counters' error rate on one kind of traffic: requests the exact
// rule judges wrongly allowed or wrongly refused, over the requests.
type errorRegime struct {
	name            string
	requests, wrong int64
}

func (r errorRegime) rate() float64 { return ratioOf(float64(r.wrong), float64(r.requests)) }

// errorRates is the two counters' error on several kinds of traffic.
type errorRates struct{ regimes []errorRegime }

// claimedErrorRate is Cloudflare's figure, 0.003% of requests; claimTolerance how far above
// it a measured rate still agrees with it (three times: the figure is "about").
const (
	claimedErrorRate = 0.00003
	claimTolerance   = 3
)

// Judge each regime: it agrees when its error rate is at most claimTolerance × the
// claimed rate. All agree: holds; none: does not hold; otherwise depends, naming each side.
func (m errorRates) Judge() Judgement {
	var holds, fails []string
	for _, r := range m.regimes {
		if r.rate() <= claimTolerance*claimedErrorRate {
			holds = append(holds, fmt.Sprintf("%s (%d of %d judged wrong)", r.name, r.wrong, r.requests))
		} else {
			fails = append(fails, fmt.Sprintf("%s (%s)", r.name, pct(r.rate())))
		}
	}
	switch {
	case len(fails) == 0:
		return Judgement{Holds, "holds " + strings.Join(holds, " and ")}
	case len(holds) == 0:
		return Judgement{DoesNotHold, "fails " + strings.Join(fails, " and ")}
	}
	return Judgement{Depends, either(holds, fails)}
}

func (m errorRates) Text() string {
	var parts []string
	for _, r := range m.regimes {
		parts = append(parts, fmt.Sprintf("%s: %d of %d (%s)", r.name, r.wrong, r.requests, pct(r.rate())))
	}
	return "two-counter requests the exact rule judges wrongly allowed or wrongly refused (false_allow + false_reject): " + strings.Join(parts, "; ")
}

// loadLimits are steady-poisson's limits for the loads the error claim measures: its
// users send 54 a minute each, so 108 and 77 per minute put them at 50% and 70%, and its
// own 60 ("") at 90%.
var loadLimits = []string{"108", "77", ""}

// nearLimit is the share of the limit from which a key of zipf-mostly-quiet counts as
// running near it.
const nearLimit = 0.9

func measureErrorRates(s *session) (Measurement, error) {
	var m errorRates
	sc, err := scenario.Load("steady-poisson")
	if err != nil {
		return nil, err
	}
	for _, limit := range loadLimits {
		args := []string{"compare", "--scenario", "steady-poisson", "--algorithms", algorithms.SlidingWindowName}
		if limit != "" {
			args = append(args, "--limit", limit)
		}
		rep, ev, err := s.report(args...)
		if err != nil {
			return nil, err
		}
		x, err := result(rep, algorithms.SlidingWindowName)
		if err != nil {
			return nil, err
		}
		perWindow := float64(x.Requests) / float64(max(x.Keys, 1)) / (sc.Horizon().Seconds() / time.Duration(rep.Policy.Window).Seconds())
		m.regimes = append(m.regimes, errorRegime{
			name:     fmt.Sprintf("with every key at %.0f%% of its limit", 100*perWindow/float64(rep.Policy.Limit)),
			requests: x.Requests, wrong: x.FalseAllow + x.FalseReject,
		})
		ev.cite(algorithms.SlidingWindowName, cellInt(x.Requests), report.Percent(x.FalseAllowRate), report.Percent(x.FalseRejectRate))
	}
	quiet, near, err := measureZipfErrors(s)
	if err != nil {
		return nil, err
	}
	m.regimes = append(m.regimes, quiet, near)
	rep, ev, err := s.report(timedArgs...)
	if err != nil {
		return nil, err
	}
	x, err := result(rep, algorithms.SlidingWindowName)
	if err != nil {
		return nil, err
	}
	m.regimes = append(m.regimes, errorRegime{name: "against a client that times its requests", requests: x.Requests, wrong: x.FalseAllow + x.FalseReject})
	ev.cite(algorithms.SlidingWindowName, cellInt(x.Requests), report.Percent(x.FalseAllowRate), report.Percent(x.FalseRejectRate))
	return m, nil
}

// measureZipfErrors splits zipf-mostly-quiet's two-counter errors between the keys that
// run below nearLimit of the limit and those that run near or above it.
func measureZipfErrors(s *session) (quiet, near errorRegime, err error) {
	args := []string{"compare", "--scenario", "zipf-mostly-quiet", "--algorithms", algorithms.SlidingWindowName, "--decisions", "decisions.csv"}
	rep, ev, err := s.report(args...)
	if err != nil {
		return quiet, near, err
	}
	x, err := result(rep, algorithms.SlidingWindowName)
	if err != nil {
		return quiet, near, err
	}
	ev.cite(algorithms.SlidingWindowName, cellInt(x.Requests), report.Percent(x.FalseAllowRate), report.Percent(x.FalseRejectRate))
	ds, err := s.decisions(args...)
	if err != nil {
		return quiet, near, err
	}
	sc, err := scenario.Load("zipf-mostly-quiet")
	if err != nil {
		return quiet, near, err
	}
	type keyCount struct{ requests, wrong int64 }
	keys := map[string]*keyCount{}
	for _, d := range ds {
		k := keys[d.key]
		if k == nil {
			k = &keyCount{}
			keys[d.key] = k
		}
		k.requests++
		if d.allowed != d.reference {
			k.wrong++
		}
	}
	windows := sc.Horizon().Seconds() / time.Duration(rep.Policy.Window).Seconds()
	var nearKeys []string
	quietKeys := 0
	for name, k := range keys {
		if float64(k.requests)/windows >= nearLimit*float64(rep.Policy.Limit) {
			near.requests += k.requests
			near.wrong += k.wrong
			nearKeys = append(nearKeys, name)
			continue
		}
		quiet.requests += k.requests
		quiet.wrong += k.wrong
		quietKeys++
	}
	sort.Strings(nearKeys)
	quiet.name = fmt.Sprintf("on zipf-mostly-quiet's %d keys below %.0f%% of their limit", quietKeys, nearLimit*100)
	near.name = fmt.Sprintf("on its keys at or above %.0f%% of it (%s)", nearLimit*100, strings.Join(nearKeys, ", "))
	return quiet, near, nil
}

// redisSource is what a memory claim says about where its Redis bytes come from.
func redisSource(m memory) string {
	if m.Loaded == 0 {
		return m.Redis + ", not a live server"
	}
	return fmt.Sprintf("%s (MEMORY USAGE of %d clients' keys per algorithm)", m.Redis, m.Loaded)
}

// memoryArgs is `rlsim memory` with the claims' server when they have one: it then loads
// memoryLoad clients per algorithm under MemoryPrefix and scales their mean.
func (s *session) memoryArgs(args ...string) []string {
	out := append([]string{"memory"}, args...)
	if s.cfg.RedisURL != "" {
		out = append(out, "--redis", "URL", "--prefix", MemoryPrefix, "--load", memoryLoad)
	}
	return out
}

// memoryLoad is how many clients per algorithm the memory claims load on a real server:
// enough for a stable mean, few enough to stay well under a second.
const memoryLoad = "1000"

// entryBytes is the cost of one stored timestamp of a sliding log.
type entryBytes struct {
	inProcess   float64 // bytes per timestamp of rlsim's in-process log
	entries     int64   // timestamps the measured key held
	perEntry    []zsetEntry
	redisSource string
}

type zsetEntry struct {
	limit    int64
	encoding string
	bytes    float64
}

// The notes' range for one stored timestamp: "tens of bytes up to nearly 100"; entryCaveat
// is where "nearly 100" stops being a fair reading.
const (
	entryLow    = 10
	entryHigh   = 110
	entryCaveat = 200
)

// Judge: holds when every measured cost lies in [entryLow, entryHigh]; holds with a caveat
// when the highest stays under entryCaveat; otherwise does not hold.
func (m entryBytes) Judge() Judgement {
	low, high := m.inProcess, m.inProcess
	for _, e := range m.perEntry {
		low, high = math.Min(low, e.bytes), math.Max(high, e.bytes)
	}
	switch {
	case low >= entryLow && high <= entryHigh:
		return Judgement{Holds, ""}
	case low >= entryLow && high <= entryCaveat:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("past 128 entries Redis turns the sorted set into a skiplist at up to %.0f B per entry", high)}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("measured %.0f to %.0f B per entry", low, high)}
}

func (m entryBytes) Text() string {
	var parts []string
	for _, e := range m.perEntry {
		parts = append(parts, fmt.Sprintf("%.1f B at limit %d (%s)", e.bytes, e.limit, e.encoding))
	}
	return fmt.Sprintf("in-process: %.0f B per timestamp (a key holding %d); in Redis, per entry: %s — %s",
		m.inProcess, m.entries, strings.Join(parts, ", "), m.redisSource)
}

func measureEntryBytes(s *session) (Measurement, error) {
	rep, ev, err := s.report("compare", "--scenario", "boundary-burst", "--algorithms", algorithms.SlidingLogName)
	if err != nil {
		return nil, err
	}
	x, err := result(rep, algorithms.SlidingLogName)
	if err != nil {
		return nil, err
	}
	ev.cite(algorithms.SlidingLogName, cellInt(x.PeakWindowAdmitted), cellFixed(x.StateBytesPerKey, 0))
	mem, ev, err := s.memory(s.memoryArgs("--algorithms", algorithms.SlidingLogName)...)
	if err != nil {
		return nil, err
	}
	m := entryBytes{inProcess: x.StateBytesPerKey / float64(x.PeakWindowAdmitted), entries: x.PeakWindowAdmitted, redisSource: redisSource(mem)}
	for _, e := range mem.ZsetEncoding {
		m.perEntry = append(m.perEntry, zsetEntry{e.Limit, e.Encoding, e.BytesPerEntry})
		ev.cite(cellInt(e.Limit), e.Encoding, cellFixed(e.BytesPerEntry, 1))
	}
	return m, nil
}

// millionKeys is a sliding log of limit 100 over a million keys in Redis.
type millionKeys struct {
	keys                 int
	perKey               float64
	encoding             string
	total, countersTotal int64
	redisSource          string
	limit                int64
}

// The notes' "several GB": from severalLow up to severalHigh is a fair reading; above 1 GB
// and outside it, a caveat.
const (
	severalLow  = 2e9
	severalHigh = 10e9
)

// Judge on the Redis total: holds in [severalLow, severalHigh); holds with a caveat from
// 1 GB; does not hold below.
func (m millionKeys) Judge() Judgement {
	switch gb := float64(m.total); {
	case gb >= severalLow && gb < severalHigh:
		return Judgement{Holds, ""}
	case gb >= 1e9:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("%.1f GB", gb/1e9)}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("%.2f GB", float64(m.total)/1e9)}
}

func (m millionKeys) Text() string {
	return fmt.Sprintf("%.0f B per key (%s, %d entries) × %d keys = %.1f GiB (%.1f GB) for %d million entries; the two counters take %.0f MiB — %s",
		m.perKey, m.encoding, m.limit, m.keys, float64(m.total)/(1<<30), float64(m.total)/1e9, int64(m.keys)*m.limit/1e6,
		float64(m.countersTotal)/(1<<20), m.redisSource)
}

// millionArgs sizes the sliding log and the two counters at limit 100 for a million keys.
func (s *session) millionArgs(limit string) []string {
	return s.memoryArgs("--keys", "1000000", "--limit", limit, "--algorithms", "sliding-log,sliding-window")
}

func measureMillionKeys(s *session) (Measurement, error) {
	mem, ev, err := s.memory(s.millionArgs("100")...)
	if err != nil {
		return nil, err
	}
	_, perKey, enc, total := mem.row(algorithms.SlidingLogName)
	_, _, _, counters := mem.row(algorithms.SlidingWindowName)
	ev.cite(algorithms.SlidingLogName, cellFixed(perKey, 0), enc, byteSize(total))
	return millionKeys{keys: mem.Keys, limit: mem.Limit, perKey: perKey, encoding: enc, total: total, countersTotal: counters, redisSource: redisSource(mem)}, nil
}

// byteSize prints bytes as rlsim memory's table does.
func byteSize(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// logVsCounters is the sliding log's memory against the two counters'.
type logVsCounters struct {
	redis100, inProcess, redis1000 float64 // ratios: Redis at limit 100, in-process, Redis at 1000
	logBytes, counterBytes         float64 // Redis bytes per key at limit 100
	logState, counterState         float64 // in-process bytes per key
	redisSource                    string
}

// The notes' "three digits": at least threeOrders orders of magnitude holds; from
// twoOrders, a caveat; below, it does not hold.
const (
	threeOrders = 2.5
	twoOrders   = 2
)

// Judge on the Redis ratio at the notes' limit of 100.
func (m logVsCounters) Judge() Judgement {
	orders := math.Log10(m.redis100)
	switch {
	case orders >= threeOrders:
		return Judgement{Holds, ""}
	case orders >= twoOrders:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("%.1f orders of magnitude in Redis at limit 100", orders)}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("%.1f orders at the notes' limit of 100; close to three only past 128 entries (%.1f at limit 1000)", orders, math.Log10(m.redis1000))}
}

func (m logVsCounters) Text() string {
	return fmt.Sprintf("at limit 100 in Redis: %.0f vs %.0f B per key = %.1f× (%.1f orders of magnitude); in-process: %.0f vs %.0f B = %.0f× (%.1f); "+
		"in Redis at limit 1000, past the sorted set's switch to a skiplist: %.0f× (%.1f) — %s",
		m.logBytes, m.counterBytes, m.redis100, math.Log10(m.redis100), m.logState, m.counterState, m.inProcess, math.Log10(m.inProcess),
		m.redis1000, math.Log10(m.redis1000), m.redisSource)
}

func measureLogVsCounters(s *session) (Measurement, error) {
	at100, ev, err := s.memory(s.millionArgs("100")...)
	if err != nil {
		return nil, err
	}
	logState, logBytes, _, _ := at100.row(algorithms.SlidingLogName)
	counterState, counterBytes, _, _ := at100.row(algorithms.SlidingWindowName)
	ev.cite(algorithms.SlidingLogName, cellFixed(logState, 0), cellFixed(logBytes, 0))
	ev.cite(algorithms.SlidingWindowName, cellFixed(counterState, 0), cellFixed(counterBytes, 0))
	args := s.memoryArgs("--keys", "1000000", "--limit", "1000", "--algorithms", "sliding-log,sliding-window")
	if s.cfg.RedisURL != "" {
		args[len(args)-1] = "100" // a hundred logs of 1000 entries: about 12 MB
	}
	at1000, ev, err := s.memory(args...)
	if err != nil {
		return nil, err
	}
	ev.cite(algorithms.SlidingLogName, fmt.Sprintf("%.1f×", at1000.SlidingLogVsTwoCounters))
	return logVsCounters{
		redis100: at100.SlidingLogVsTwoCounters, redis1000: at1000.SlidingLogVsTwoCounters, inProcess: ratioOf(logState, counterState),
		logBytes: logBytes, counterBytes: counterBytes, logState: logState, counterState: counterState, redisSource: redisSource(at100),
	}, nil
}

// cheapFix is what replacing the fixed window with two counters costs and buys.
type cheapFix struct {
	limit                   int64
	fixedBytes, windowBytes float64 // in-process bytes per key
	fixedRedis, windowRedis float64 // Redis bytes per key at the limit
	fixedPeak, windowPeak   int64   // boundary burst
	timedPeak               int64   // a timed client through the two counters
}

// What "costs almost nothing" allows per key: cheapInProcess more bytes in-process and
// cheapRedis more in Redis.
const (
	cheapInProcess = 16
	cheapRedis     = 128
)

// Judge: not cheap, or not even fixing the boundary burst: does not hold. Cheap and
// holding a timed client under timedLarge too: holds. Otherwise depends: it removes the
// boundary burst's 2× but not a timed client's.
func (m cheapFix) Judge() Judgement {
	cheap := m.windowBytes-m.fixedBytes <= cheapInProcess && m.windowRedis-m.fixedRedis <= cheapRedis
	fixesBoundary := m.windowPeak <= m.limit && m.fixedPeak > m.limit
	fixesTimed := float64(m.timedPeak) < timedLarge*float64(m.limit)
	switch {
	case !cheap:
		return Judgement{DoesNotHold, fmt.Sprintf("two counters cost %.0f B more per key in-process and %.0f B more in Redis", m.windowBytes-m.fixedBytes, m.windowRedis-m.fixedRedis)}
	case !fixesBoundary:
		return Judgement{DoesNotHold, fmt.Sprintf("the two counters admit %d of the boundary burst", m.windowPeak)}
	case fixesTimed:
		return Judgement{Holds, ""}
	}
	return Judgement{Depends, either(
		[]string{fmt.Sprintf("for the boundary burst (%d in a minute against the fixed window's %d)", m.windowPeak, m.fixedPeak)},
		[]string{fmt.Sprintf("against a client that times its requests (%d, %.2f× the limit)", m.timedPeak, float64(m.timedPeak)/float64(m.limit))})}
}

func (m cheapFix) Text() string {
	return fmt.Sprintf("per key: fixed window %.0f B in-process and %.0f B in Redis, two counters %.0f B and %.0f B; boundary burst at %d/min: fixed window %d in one minute, two counters %d; "+
		"a client that times its requests gets %d through the two counters",
		m.fixedBytes, m.fixedRedis, m.windowBytes, m.windowRedis, m.limit, m.fixedPeak, m.windowPeak, m.timedPeak)
}

func measureCheapFix(s *session) (Measurement, error) {
	rep, ev, err := s.report(boundaryArgs...)
	if err != nil {
		return nil, err
	}
	m := cheapFix{limit: rep.Policy.Limit}
	for _, p := range []struct {
		alg   string
		bytes *float64
		peak  *int64
	}{{algorithms.FixedWindowName, &m.fixedBytes, &m.fixedPeak}, {algorithms.SlidingWindowName, &m.windowBytes, &m.windowPeak}} {
		x, err := result(rep, p.alg)
		if err != nil {
			return nil, err
		}
		*p.bytes, *p.peak = x.StateBytesPerKey, x.PeakWindowAdmitted
		ev.cite(p.alg, cellInt(x.PeakWindowAdmitted), cellRatio(x.OverAdmission), cellFixed(x.StateBytesPerKey, 0))
	}
	mem, ev, err := s.memory(s.memoryArgs("--keys", "1000000", "--limit", "100", "--algorithms", "fixed-window,sliding-window")...)
	if err != nil {
		return nil, err
	}
	_, m.fixedRedis, _, _ = mem.row(algorithms.FixedWindowName)
	_, m.windowRedis, _, _ = mem.row(algorithms.SlidingWindowName)
	ev.cite(algorithms.FixedWindowName, cellFixed(m.fixedRedis, 0))
	ev.cite(algorithms.SlidingWindowName, cellFixed(m.windowRedis, 0))
	timed, ev, err := s.report(timedArgs...)
	if err != nil {
		return nil, err
	}
	x, err := result(timed, algorithms.SlidingWindowName)
	if err != nil {
		return nil, err
	}
	m.timedPeak = x.PeakWindowAdmitted
	ev.cite(algorithms.SlidingWindowName, cellInt(x.PeakWindowAdmitted), cellRatio(x.OverAdmission))
	return m, nil
}

// notesScript compares the notes' two-counter script with rlsim's corrected window.
type notesScript struct {
	limit                            int64
	rlsimAdmitted, notesAdmitted     int64 // steady-poisson, every key at 90% of its limit
	rlsimPeak, notesPeak             int64
	rlsimFalseAllow, notesFalseAllow float64
	rlsimHog, notesHog, hogSent      int64 // cost-weighted: the report hog's requests admitted
	hogCost                          int64
}

// unitSlack is how much more than rlsim's window the notes' script may admit of unit-cost
// traffic in one trailing window and still count as enforcing the same limit.
const unitSlack = 1

// Judge two regimes: requests of cost 1 (the script's peak within unitSlack of rlsim's),
// and weighted requests (the report hog gets no more through than under rlsim's window).
// Both: holds; only the first: depends; neither: does not hold.
func (m notesScript) Judge() Judgement {
	unit := m.notesPeak <= m.rlsimPeak+unitSlack
	weighted := m.notesHog <= m.rlsimHog
	unitText := fmt.Sprintf("for requests of cost 1 (peak %d against rlsim's %d)", m.notesPeak, m.rlsimPeak)
	weightedText := fmt.Sprintf("for weighted requests: it counts a report of cost %d as 1, and the report hog gets %d of %d through (rlsim's window: %d)", m.hogCost, m.notesHog, m.hogSent, m.rlsimHog)
	switch {
	case unit && weighted:
		return Judgement{Holds, ""}
	case unit:
		return Judgement{Depends, either([]string{unitText}, []string{weightedText})}
	case weighted:
		return Judgement{Depends, either([]string{"for weighted requests"}, []string{unitText})}
	}
	return Judgement{DoesNotHold, unitText + "; " + weightedText}
}

func (m notesScript) Text() string {
	return fmt.Sprintf("flood-one-key, one key at 20/s against %d/min: the notes' script (refuse when the estimate >= L) admits %d with %s false allows, peak %d in one minute; "+
		"rlsim's window (admit when estimate + cost <= L) admits %d with %s, peak %d — the notes' rule lets one more in whenever the estimate is a fraction below L; "+
		"cost-weighted: the report hog (cost %d) gets %d of %d reports through the notes' script, %d through rlsim's window",
		m.limit, m.notesAdmitted, pct(m.notesFalseAllow), m.notesPeak, m.rlsimAdmitted, pct(m.rlsimFalseAllow), m.rlsimPeak,
		m.hogCost, m.notesHog, m.hogSent, m.rlsimHog)
}

// costWeightedArgs runs cost-weighted under the token bucket, rlsim's window and the
// notes' script: the cost claims read it.
var costWeightedArgs = []string{"compare", "--scenario", "cost-weighted", "--algorithms", "token-bucket,sliding-window,notes-sliding-window"}

func measureNotesScript(s *session) (Measurement, error) {
	rep, ev, err := s.report(floodArgs...)
	if err != nil {
		return nil, err
	}
	m := notesScript{limit: rep.Policy.Limit}
	rows := map[string]report.Result{}
	for _, a := range []string{algorithms.SlidingWindowName, algorithms.NotesSlidingWindowName} {
		x, err := result(rep, a)
		if err != nil {
			return nil, err
		}
		rows[a] = x
		ev.cite(a, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected), cellInt(x.PeakWindowAdmitted), cellRatio(x.OverAdmission), report.Percent(x.FalseAllowRate))
	}
	m.rlsimAdmitted, m.rlsimPeak, m.rlsimFalseAllow = rows[algorithms.SlidingWindowName].Admitted, rows[algorithms.SlidingWindowName].PeakWindowAdmitted, rows[algorithms.SlidingWindowName].FalseAllowRate
	m.notesAdmitted, m.notesPeak, m.notesFalseAllow = rows[algorithms.NotesSlidingWindowName].Admitted, rows[algorithms.NotesSlidingWindowName].PeakWindowAdmitted, rows[algorithms.NotesSlidingWindowName].FalseAllowRate
	cw, ev, err := s.report(costWeightedArgs...)
	if err != nil {
		return nil, err
	}
	actor, cost, err := costHog()
	if err != nil {
		return nil, err
	}
	m.hogCost = cost
	for _, p := range []struct {
		alg string
		to  *int64
	}{{algorithms.SlidingWindowName, &m.rlsimHog}, {algorithms.NotesSlidingWindowName, &m.notesHog}} {
		x, err := result(cw, p.alg)
		if err != nil {
			return nil, err
		}
		if *p.to, m.hogSent, err = attacker(x, actor); err != nil {
			return nil, err
		}
		ev.cite(p.alg, fmt.Sprintf("%d/%d", *p.to, m.hogSent))
	}
	return m, nil
}

// costHog reads cost-weighted's attacker campaign from the scenario: a user who only asks
// for the dearest endpoint. It returns the campaign's actor and what one of its requests
// costs.
func costHog() (string, int64, error) {
	sc, err := scenario.Load("cost-weighted")
	if err != nil {
		return "", 0, err
	}
	for _, t := range sc.Traffic {
		if c, ok := t.Spec.(*scenario.CostWeightedSpec); ok && c.Label == "attacker" {
			var cost int64
			for _, r := range c.Routes {
				cost = max(cost, r.Cost)
			}
			return c.Actor, cost, nil
		}
	}
	return "", 0, fmt.Errorf("cost-weighted: no attacker campaign")
}

// exactOrCheap is the exact log against the fixed window on steady traffic: what each got
// right and what each costs per key.
type exactOrCheap struct {
	limit                int64
	logPeak, fixedPeak   int64
	logWrong, fixedWrong float64 // false_allow_rate + false_reject_rate
	logBytes, fixedBytes float64
}

// costly is how many times the fixed window's memory the log must take to count as costly.
const costly = 10

// Judge: holds when the log never breaks the limit and is never wrong, the fixed window
// breaks it, and the log costs costly times the memory; does not hold otherwise.
func (m exactOrCheap) Judge() Judgement {
	switch {
	case m.logPeak > m.limit || m.logWrong > 0:
		return Judgement{DoesNotHold, fmt.Sprintf("the log admitted %d in one window and was wrong on %s", m.logPeak, pct(m.logWrong))}
	case m.fixedPeak <= m.limit:
		return Judgement{DoesNotHold, "the fixed window kept the limit on this traffic"}
	case m.logBytes < costly*m.fixedBytes:
		return Judgement{DoesNotHold, fmt.Sprintf("the log costs only %s the fixed window's memory", times(ratioOf(m.logBytes, m.fixedBytes)))}
	}
	return Judgement{Holds, ""}
}

func (m exactOrCheap) Text() string {
	return fmt.Sprintf("flood-one-key (one key at 20/s against %d/min): the sliding log peaks at %d in one minute and is wrong on %s of requests, at %.0f B per key; "+
		"the fixed window peaks at %d (%.2f×) and is wrong on %s, at %.0f B per key (the log: %s)",
		m.limit, m.logPeak, pct(m.logWrong), m.logBytes, m.fixedPeak, float64(m.fixedPeak)/float64(m.limit), pct(m.fixedWrong), m.fixedBytes,
		times(ratioOf(m.logBytes, m.fixedBytes)))
}

func measureExactOrCheap(s *session) (Measurement, error) {
	rep, ev, err := s.report(floodArgs...)
	if err != nil {
		return nil, err
	}
	m := exactOrCheap{limit: rep.Policy.Limit}
	for _, p := range []struct {
		alg         string
		peak        *int64
		wrong, size *float64
	}{{algorithms.SlidingLogName, &m.logPeak, &m.logWrong, &m.logBytes}, {algorithms.FixedWindowName, &m.fixedPeak, &m.fixedWrong, &m.fixedBytes}} {
		x, err := result(rep, p.alg)
		if err != nil {
			return nil, err
		}
		*p.peak, *p.wrong, *p.size = x.PeakWindowAdmitted, x.FalseAllowRate+x.FalseRejectRate, x.StateBytesPerKey
		ev.cite(p.alg, cellInt(x.PeakWindowAdmitted), cellRatio(x.OverAdmission), report.Percent(x.FalseAllowRate), report.Percent(x.FalseRejectRate), cellFixed(x.StateBytesPerKey, 0))
	}
	return m, nil
}
