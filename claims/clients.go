package claims

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/traffic"
)

// unmarshalBody decodes a response's problem body into v.
func unmarshalBody(r response, v any) error {
	if len(r.Body) == 0 {
		return fmt.Errorf("the %d response has no body", r.Status)
	}
	return json.Unmarshal(r.Body, v)
}

// refusalArgs is rlsim's default refusal: a two-counter window of 100 per minute and a
// burst of 101 at 10:00:48.
var refusalArgs = []string{"headers"}

// statusLine prints a status as `rlsim headers` does.
func statusLine(status int) string {
	return fmt.Sprintf("HTTP/1.1 %d %s", status, http.StatusText(status))
}

// refusalStatus is the status rlsim sends a client over its limit.
type refusalStatus struct{ status int }

// Judge: holds for 429; does not hold for anything else (403 says "not allowed at all",
// 503 "the server is overloaded").
func (m refusalStatus) Judge() Judgement {
	if m.status == http.StatusTooManyRequests {
		return Judgement{Holds, "503 stays for the server's own overload (the retry models' hiccups), 403 for a request never allowed"}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("a client over its limit gets %d", m.status)}
}

func (m refusalStatus) Text() string {
	return fmt.Sprintf("the response to the 101st request in a minute under 100 per minute: %s", statusLine(m.status))
}

func measureRefusalStatus(s *session) (Measurement, error) {
	r, ev, err := s.headers(refusalArgs...)
	if err != nil {
		return nil, err
	}
	ev.cite(statusLine(r.Status))
	return refusalStatus{r.Status}, nil
}

// retryAfter is rlsim's Retry-After in both forms and how often a client that waits
// exactly that long is refused again.
type retryAfter struct {
	seconds, date string
	refusedAgain  *float64 // retry_after_refused_share with a key per client; nil: none measured
	clients       int
}

// retryTruth is the share of retries at Retry-After that may be refused again for the
// header to count as telling the truth.
const retryTruth = 0.01

// Judge: holds when the header comes as whole seconds and as an HTTP-date, and clients
// that wait exactly that long are refused again at most retryTruth of the time; does not
// hold otherwise.
func (m retryAfter) Judge() Judgement {
	secs, err := strconv.Atoi(m.seconds)
	_, derr := http.ParseTime(m.date)
	switch {
	case err != nil || secs < 1:
		return Judgement{DoesNotHold, fmt.Sprintf("Retry-After %q is not whole seconds", m.seconds)}
	case derr != nil:
		return Judgement{DoesNotHold, fmt.Sprintf("Retry-After %q is not an HTTP-date", m.date)}
	case m.refusedAgain == nil || *m.refusedAgain > retryTruth:
		return Judgement{DoesNotHold, "clients that waited as told were refused again"}
	}
	return Judgement{Holds, "with a key per client; a crowd sharing one key is another matter (retry-after-calms-clients)"}
}

func (m retryAfter) Text() string {
	again := "none measured"
	if m.refusedAgain != nil {
		again = pct(*m.refusedAgain)
	}
	return fmt.Sprintf("Retry-After: %s (seconds, rounded up from the limiter's exact wait) or, asked for, %s; %d clients each with its own limit that wait exactly what it says are refused again on %s of those retries",
		m.seconds, m.date, m.clients, again)
}

// truthArgs has 50 clients, each with a limit of its own (5 per second) and 20 requests to
// make, that honour Retry-After: how often it lies, and what honouring it saves.
var truthArgs = []string{"backoff", "--model", "rate-limited", "--key", "client", "--limit", "5", "--window", "1s", "--requests", "20",
	"--clients", "50", "--hiccup", "0s", "--strategies", strings.Join(honourStrategies, ","), "--runs", "1"}

// honourStrategies are the strategies the Retry-After claims compare: no backoff of the
// client's own, a fixed one, and full jitter.
var honourStrategies = []string{"none", "constant", "full-jitter"}

// refusedAgain is the highest share of retries at Retry-After refused again over the
// strategies of a run; nil when none retried on Retry-After.
func refusedAgain(by map[string]report.RetryResult) *float64 {
	var most *float64
	for _, n := range honourStrategies {
		if v := by[n].RetryAfterRefusedShare; v != nil && (most == nil || *v > *most) {
			most = v
		}
	}
	return most
}

func measureRetryAfter(s *session) (Measurement, error) {
	r, ev, err := s.headers(refusalArgs...)
	if err != nil {
		return nil, err
	}
	m := retryAfter{seconds: r.Headers["Retry-After"]}
	ev.cite("Retry-After: " + m.seconds)
	if r, ev, err = s.headers("headers", "--retry-after-date"); err != nil {
		return nil, err
	}
	m.date = r.Headers["Retry-After"]
	ev.cite("Retry-After: " + m.date)
	by, ev, err := s.backoff(truthArgs...)
	if err != nil {
		return nil, err
	}
	m.refusedAgain, m.clients = refusedAgain(by), by["none"].Clients
	citeShares(ev, by)
	return m, nil
}

// rateLimitFields is what the refusal says about the limit in its RateLimit fields.
type rateLimitFields struct {
	limit   int64
	headers map[string]string
}

// Judge: holds when the draft's RateLimit-Policy and RateLimit fields are sent, and the
// older RateLimit-* and X-RateLimit-* fields say the limit, nothing remaining and the same
// reset as the draft's t (the seconds until the quota is whole again), which is no sooner
// than Retry-After (the first moment another request may pass); does not hold otherwise.
func (m rateLimitFields) Judge() Judgement {
	h := m.headers
	var wrong []string
	for _, name := range []string{"RateLimit", "RateLimit-Policy"} {
		if h[name] == "" {
			wrong = append(wrong, name+" missing")
		}
	}
	reset := draftReset(h["RateLimit"])
	retry, retryErr := strconv.ParseInt(h["Retry-After"], 10, 64)
	if reset == "" || retryErr != nil {
		wrong = append(wrong, fmt.Sprintf("no reset to compare: RateLimit %q, Retry-After %q", h["RateLimit"], h["Retry-After"]))
	} else if t, _ := strconv.ParseInt(reset, 10, 64); t < retry {
		wrong = append(wrong, fmt.Sprintf("the quota is whole again (t=%s) before another request may pass (Retry-After %d)", reset, retry))
	}
	for _, prefix := range []string{"RateLimit-", "X-RateLimit-"} {
		if h[prefix+"Limit"] != cellInt(m.limit) || h[prefix+"Remaining"] != "0" || h[prefix+"Reset"] != reset {
			wrong = append(wrong, fmt.Sprintf("%sLimit/Remaining/Reset = %s/%s/%s", prefix, h[prefix+"Limit"], h[prefix+"Remaining"], h[prefix+"Reset"]))
		}
	}
	if len(wrong) > 0 {
		return Judgement{DoesNotHold, strings.Join(wrong, "; ")}
	}
	return Judgement{Holds, "reset is when the quota is whole again; Retry-After when the next request may pass; the older fields only when asked for (--legacy-headers, --x-ratelimit)"}
}

// draftReset is the t parameter of the draft's RateLimit field ("name";r=R;t=T), "" when
// there is none.
func draftReset(field string) string {
	for _, p := range strings.Split(field, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(p), "t="); ok {
			return v
		}
	}
	return ""
}

func (m rateLimitFields) Text() string {
	h := m.headers
	return fmt.Sprintf("the refusal under %d per minute carries RateLimit-Policy: %s and RateLimit: %s (the IETF draft), RateLimit-Limit %s, -Remaining %s, -Reset %s, "+
		"and the same three as X-RateLimit-* (%s, %s, %s), beside Retry-After: %s",
		m.limit, h["RateLimit-Policy"], h["RateLimit"], h["RateLimit-Limit"], h["RateLimit-Remaining"], h["RateLimit-Reset"],
		h["X-RateLimit-Limit"], h["X-RateLimit-Remaining"], h["X-RateLimit-Reset"], h["Retry-After"])
}

func measureRateLimitFields(s *session) (Measurement, error) {
	r, ev, err := s.headers("headers", "--legacy-headers", "--x-ratelimit")
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "X-RateLimit-Reset"} {
		ev.cite(name + ": " + r.Headers[name])
	}
	return rateLimitFields{limit: 100, headers: r.Headers}, nil
}

// noStore is the refusal's caching header.
type noStore struct{ cacheControl string }

// Judge: holds when the 429 says no-store; does not hold otherwise.
func (m noStore) Judge() Judgement {
	for _, d := range strings.Split(m.cacheControl, ",") {
		if strings.TrimSpace(d) == "no-store" {
			return Judgement{Holds, "that shared caches do store refusals is the notes' report, not something rlsim can run"}
		}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("Cache-Control %q", m.cacheControl)}
}

func (m noStore) Text() string {
	return fmt.Sprintf("the 429 carries Cache-Control: %s, so no shared cache may keep it and hand it to other clients", m.cacheControl)
}

func measureNoStore(s *session) (Measurement, error) {
	r, ev, err := s.headers(refusalArgs...)
	if err != nil {
		return nil, err
	}
	ev.cite("Cache-Control: " + r.Headers["Cache-Control"])
	return noStore{r.Headers["Cache-Control"]}, nil
}

// stormRuns is how many runs the retry-storm claims average: the waves and the order of
// the strategies they compare are far enough apart for one.
const stormRuns = "1"

// stormStrategies are the strategies of the storm the claims read: two deterministic, three
// jittered. (none, retrying at once, makes five times the calls of any and adds nothing the
// claims need: constant also honours Retry-After and nothing else, its sleep being shorter.)
var stormStrategies = []string{"constant", "exponential", "full-jitter", "equal-jitter", "decorrelated-jitter"}

// stormArgs is the notes' storm: 1000 clients failed at once by a hiccup, against a token
// bucket of 100 per second.
var stormArgs = []string{"backoff", "--model", "rate-limited", "--runs", stormRuns, "--strategies", strings.Join(stormStrategies, ",")}

// occArgs is Brooker's optimistic-concurrency experiment, 100 clients.
var occArgs = []string{"backoff", "--model", "occ", "--runs", "20"}

// citeShares cites the share of Retry-After retries refused again, per strategy.
func citeShares(ev *Evidence, by map[string]report.RetryResult) {
	for _, n := range honourStrategies {
		if v := by[n].RetryAfterRefusedShare; v != nil {
			ev.cite(n, cellInt(int64(by[n].Clients)), cellCSV(*v))
		}
	}
}

// citeStrategies cites each named strategy's row of a backoff table: calls, completion and
// peak arrivals.
func citeStrategies(ev *Evidence, by map[string]report.RetryResult, names ...string) {
	for _, n := range names {
		r := by[n]
		ev.cite(n, cellInt(int64(r.Clients)), cellInt(int64(r.Runs)), cellCSV(r.CallsMean), cellCSV(r.CompletionMSMean), cellCSV(r.PeakArrivals))
	}
}

// waves compares the retry herd of deterministic and jittered strategies in the storm.
type waves struct {
	clients  int
	peaks    map[string]float64 // peak_arrivals by strategy
	fixed    []string           // deterministic strategies
	jittered []string
}

// waveRatio is how much taller the deterministic strategies' highest retry wave must be
// than the jittered ones' for "synchronized waves" to be shown.
const waveRatio = 5

func (m waves) extremes() (lowestFixed, highestJittered float64) {
	lowestFixed = -1
	for _, s := range m.fixed {
		if lowestFixed < 0 || m.peaks[s] < lowestFixed {
			lowestFixed = m.peaks[s]
		}
	}
	for _, s := range m.jittered {
		highestJittered = max(highestJittered, m.peaks[s])
	}
	return lowestFixed, highestJittered
}

// Judge: holds when every deterministic strategy's peak is at least waveRatio times every
// jittered one's; holds with a caveat from twice; otherwise does not hold.
func (m waves) Judge() Judgement {
	fixed, jittered := m.extremes()
	switch r := ratioOf(fixed, jittered); {
	case r >= waveRatio:
		return Judgement{Holds, ""}
	case r >= 2:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("the deterministic waves are only %s the jittered ones", times(r))}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("the deterministic waves are %s the jittered ones", times(ratioOf(fixed, jittered)))}
}

func (m waves) Text() string {
	var parts []string
	for _, s := range slices.Concat(m.fixed, m.jittered) {
		parts = append(parts, fmt.Sprintf("%s %.1f", s, m.peaks[s]))
	}
	return fmt.Sprintf("%d clients failed at once by a half-second hiccup, retrying against a token bucket of 100 per second: the most retries arriving in one 10 ms bin (mean of the runs) — %s",
		m.clients, strings.Join(parts, ", "))
}

func measureWaves(s *session) (Measurement, error) {
	by, ev, err := s.backoff(stormArgs...)
	if err != nil {
		return nil, err
	}
	m := waves{clients: by["exponential"].Clients, peaks: map[string]float64{},
		fixed: []string{"constant", "exponential"}, jittered: []string{"full-jitter", "equal-jitter", "decorrelated-jitter"}}
	for _, n := range slices.Concat(m.fixed, m.jittered) {
		m.peaks[n] = by[n].PeakArrivals
	}
	citeStrategies(ev, by, slices.Concat(m.fixed, m.jittered)...)
	return m, nil
}

// duel compares two strategies in both experiments: Brooker's OCC model and the storm.
type duel struct {
	a, b       string // a is claimed to beat b on calls and time
	occ, storm [2]report.RetryResult
}

// beats reports whether the first row makes fewer calls and finishes sooner.
func beats(p [2]report.RetryResult) bool {
	return p[0].CallsMean < p[1].CallsMean && p[0].CompletionMSMean < p[1].CompletionMSMean
}

// Judge: holds when a beats b on both counts in both experiments; depends when in one;
// does not hold in neither.
func (m duel) Judge() Judgement {
	occ := fmt.Sprintf("in the optimistic-concurrency experiment (%.0f calls in %.1f s against %.0f in %.1f s)",
		m.occ[0].CallsMean, m.occ[0].CompletionMSMean/1000, m.occ[1].CallsMean, m.occ[1].CompletionMSMean/1000)
	storm := fmt.Sprintf("in the rate-limited storm (%.0f calls in %.1f s against %.0f in %.1f s)",
		m.storm[0].CallsMean, m.storm[0].CompletionMSMean/1000, m.storm[1].CallsMean, m.storm[1].CompletionMSMean/1000)
	switch o, s := beats(m.occ), beats(m.storm); {
	case o && s:
		return Judgement{Holds, "in both experiments"}
	case o:
		return Judgement{Depends, either([]string{occ}, []string{storm})}
	case s:
		return Judgement{Depends, either([]string{storm}, []string{occ})}
	}
	return Judgement{DoesNotHold, "in neither experiment"}
}

func (m duel) Text() string {
	row := func(r report.RetryResult) string {
		return fmt.Sprintf("%s %.0f calls, %.1f s", r.Strategy, r.CallsMean, r.CompletionMSMean/1000)
	}
	return fmt.Sprintf("Brooker's optimistic-concurrency experiment, %d clients, mean of %d runs: %s; %s. The notes' storm, %d clients against a token bucket of 100 per second, mean of %d runs: %s; %s",
		m.occ[0].Clients, m.occ[0].Runs, row(m.occ[0]), row(m.occ[1]), m.storm[0].Clients, m.storm[0].Runs, row(m.storm[0]), row(m.storm[1]))
}

func measureDuel(a, b string) func(*session) (Measurement, error) {
	return func(s *session) (Measurement, error) {
		occ, ev, err := s.backoff(occArgs...)
		if err != nil {
			return nil, err
		}
		citeStrategies(ev, occ, a, b)
		storm, ev, err := s.backoff(stormArgs...)
		if err != nil {
			return nil, err
		}
		citeStrategies(ev, storm, a, b)
		return duel{a: a, b: b, occ: [2]report.RetryResult{occ[a], occ[b]}, storm: [2]report.RetryResult{storm[a], storm[b]}}, nil
	}
}

// honour compares clients that honour Retry-After with clients that ignore it, per
// strategy, each client with a limit of its own.
type honour struct {
	honoured, ignored map[string]report.RetryResult
}

// honourGain is how many times the calls of ignoring clients must exceed those of
// honouring ones, for some strategy, for honouring to count as a clear win.
const honourGain = 2

// Judge: does not hold when honouring costs more calls for some strategy; holds when it
// costs no more for any and ignoring costs honourGain times the calls for one; holds with
// a caveat when the saving is smaller.
func (m honour) Judge() Judgement {
	best, bestName := 0.0, ""
	for _, n := range honourStrategies {
		h, i := m.honoured[n], m.ignored[n]
		if h.CallsMean > i.CallsMean {
			return Judgement{DoesNotHold, fmt.Sprintf("%s made %.0f calls honouring Retry-After, %.0f ignoring it", n, h.CallsMean, i.CallsMean)}
		}
		if r := ratioOf(i.CallsMean, h.CallsMean); r > best {
			best, bestName = r, n
		}
	}
	if best >= honourGain {
		return Judgement{Holds, fmt.Sprintf("most for a client without a backoff of its own (%s: %s the calls when ignored)", bestName, times(best))}
	}
	return Judgement{HoldsWithCaveat, fmt.Sprintf("honouring saves at most %s the calls", times(best))}
}

func (m honour) Text() string {
	var parts []string
	for _, n := range honourStrategies {
		h, i := m.honoured[n], m.ignored[n]
		parts = append(parts, fmt.Sprintf("%s %.0f calls, done in %.1f s, against %.0f calls in %.1f s", n, h.CallsMean, h.CompletionMSMean/1000, i.CallsMean, i.CompletionMSMean/1000))
	}
	return fmt.Sprintf("%d clients, each with a limit of its own and 20 requests to make, honouring Retry-After against ignoring it: %s",
		m.honoured["none"].Clients, strings.Join(parts, "; "))
}

func measureHonour(s *session) (Measurement, error) {
	honoured, ev, err := s.backoff(truthArgs...)
	if err != nil {
		return nil, err
	}
	citeStrategies(ev, honoured, honourStrategies...)
	ignored, ev, err := s.backoff(append(slices.Clone(truthArgs), "--retry-after", "ignore")...)
	if err != nil {
		return nil, err
	}
	citeStrategies(ev, ignored, honourStrategies...)
	return honour{honoured: honoured, ignored: ignored}, nil
}

// caps compares uncapped retrying with an attempt cap and a deadline.
type caps struct {
	maxAttempts            int
	deadline               time.Duration
	uncapped, capped, late report.RetryResult
}

// deadlineSlack is how long after the deadline a client may still finish: the reply to
// the last attempt it sent before the deadline.
const deadlineSlack = time.Second

// Judge: holds when the cap keeps calls to clients × attempts with give-ups, the deadline
// finishes every client by deadline + deadlineSlack, and both make fewer calls than no
// limit; does not hold otherwise.
func (m caps) Judge() Judgement {
	capOK := m.capped.CallsMean <= float64(m.capped.Clients*m.maxAttempts) && m.capped.GiveUps > 0 && m.capped.CallsMean < m.uncapped.CallsMean
	deadlineOK := time.Duration(m.late.CompletionMSMean*float64(time.Millisecond)) <= m.deadline+deadlineSlack && m.late.CallsMean < m.uncapped.CallsMean
	if capOK && deadlineOK {
		return Judgement{Holds, "the clients that give up do not get through: a cap ends the retrying, not the failure"}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("cap: %.0f calls for %d clients × %d attempts; deadline %s: done after %.1f s",
		m.capped.CallsMean, m.capped.Clients, m.maxAttempts, m.deadline, m.late.CompletionMSMean/1000)}
}

func (m caps) Text() string {
	return fmt.Sprintf("%d clients retrying with a fixed backoff in the storm: without limits %.0f calls, done after %.1f s; at most %d attempts, %.0f calls, %.0f give-ups, done after %.1f s; "+
		"a deadline of %s, %.0f calls, %.0f give-ups, done after %.1f s",
		m.uncapped.Clients, m.uncapped.CallsMean, m.uncapped.CompletionMSMean/1000, m.maxAttempts, m.capped.CallsMean, m.capped.GiveUps, m.capped.CompletionMSMean/1000,
		m.deadline, m.late.CallsMean, m.late.GiveUps, m.late.CompletionMSMean/1000)
}

func measureCaps(s *session) (Measurement, error) {
	m := caps{maxAttempts: 3, deadline: 5 * time.Second}
	uncapped, ev, err := s.backoff(stormArgs...)
	if err != nil {
		return nil, err
	}
	citeStrategies(ev, uncapped, capsStrategy)
	one := []string{"backoff", "--model", "rate-limited", "--runs", stormRuns, "--strategies", capsStrategy}
	capped, ev, err := s.backoff(append(slices.Clone(one), "--max-attempts", strconv.Itoa(m.maxAttempts))...)
	if err != nil {
		return nil, err
	}
	citeStrategies(ev, capped, capsStrategy)
	late, ev, err := s.backoff(append(slices.Clone(one), "--deadline", m.deadline.String())...)
	if err != nil {
		return nil, err
	}
	citeStrategies(ev, late, capsStrategy)
	m.uncapped, m.capped, m.late = uncapped[capsStrategy], capped[capsStrategy], late[capsStrategy]
	return m, nil
}

// capsStrategy is the storm's strategy the caps are tried on: a fixed backoff, which left
// alone retries until the limit lets every client through.
const capsStrategy = "constant"

// finalStatuses is which statuses rlsim's clients retry, and what rlsim answers a request
// that can never pass.
type finalStatuses struct {
	retried, final []int // of the statuses tried
	neverStatus    int   // the answer to a request costing more than the bucket holds
	neverRetry     string
}

// triedStatuses are the statuses the claim tries: the client errors a server sends most,
// 429, and the server errors.
var triedStatuses = []int{400, 401, 403, 404, 409, 413, 422, 429, 500, 502, 503, 504}

// Judge: does not hold when rlsim's clients retry a 4xx other than 429 or give up on a 429
// or 5xx. Otherwise holds when rlsim answers a request that can never pass with a final
// 4xx, and holds with a caveat when it answers 429 (then its clients retry it until their
// attempt cap).
func (m finalStatuses) Judge() Judgement {
	for _, s := range m.retried {
		if s != http.StatusTooManyRequests && s < 500 {
			return Judgement{DoesNotHold, fmt.Sprintf("rlsim's clients retry %d", s)}
		}
	}
	for _, s := range m.final {
		if s == http.StatusTooManyRequests || s >= 500 {
			return Judgement{DoesNotHold, fmt.Sprintf("rlsim's clients give up on %d", s)}
		}
	}
	if m.neverStatus == http.StatusTooManyRequests {
		return Judgement{HoldsWithCaveat, "rlsim answers a request that can never pass with 429 (no Retry-After), which its own clients retry until their attempt cap"}
	}
	return Judgement{Holds, ""}
}

func (m finalStatuses) Text() string {
	join := func(xs []int) string {
		var s []string
		for _, x := range xs {
			s = append(s, strconv.Itoa(x))
		}
		return strings.Join(s, ", ")
	}
	retry := "no Retry-After"
	if m.neverRetry != "" {
		retry = "Retry-After " + m.neverRetry
	}
	return fmt.Sprintf("rlsim's clients retry %s and treat %s as final; a request of cost 30 against a bucket of 20 gets %d with %s",
		join(m.retried), join(m.final), m.neverStatus, retry)
}

func measureFinalStatuses(s *session) (Measurement, error) {
	var m finalStatuses
	for _, st := range triedStatuses {
		if traffic.Retryable(st) {
			m.retried = append(m.retried, st)
		} else {
			m.final = append(m.final, st)
		}
	}
	r, ev, err := s.headers(consumeArgs(algorithms.TokenBucketName, 30, 1)...)
	if err != nil {
		return nil, err
	}
	ev.cite(statusLine(r.Status))
	m.neverStatus, m.neverRetry = r.Status, r.Headers["Retry-After"]
	return m, nil
}

// idempotency compares a retried payment with and without an idempotency key.
type idempotency struct{ without, with report.RetryResult }

// Judge: holds when retries ran some payment twice without keys and none with them; does
// not hold otherwise.
func (m idempotency) Judge() Judgement {
	if m.without.Duplicates > 0 && m.with.Duplicates == 0 {
		return Judgement{Holds, ""}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("duplicates: %.0f without keys, %.0f with", m.without.Duplicates, m.with.Duplicates)}
}

func (m idempotency) Text() string {
	return fmt.Sprintf("%d clients each make one non-idempotent request (a payment); the server replies 2 s late for half a second and the clients time out after 1 s and retry: "+
		"without idempotency keys %.0f payments run twice per run, with them %.0f", m.without.Clients, m.without.Duplicates, m.with.Duplicates)
}

// paymentArgs is a payment retried after a client timeout.
var paymentArgs = []string{"backoff", "--model", "rate-limited", "--clients", "100", "--limit", "1000", "--strategies", "full-jitter",
	"--hiccup-kind", "slow", "--timeout", "1s", "--non-idempotent", "--runs", stormRuns}

func measureIdempotency(s *session) (Measurement, error) {
	without, ev, err := s.backoff(paymentArgs...)
	if err != nil {
		return nil, err
	}
	ev.cite("full-jitter", "100", stormRuns, cellCSV(without["full-jitter"].CallsMean), cellCSV(without["full-jitter"].Duplicates))
	with, ev, err := s.backoff(append(slices.Clone(paymentArgs), "--idempotency-keys")...)
	if err != nil {
		return nil, err
	}
	ev.cite("full-jitter", "100", stormRuns, cellCSV(with["full-jitter"].CallsMean), cellCSV(with["full-jitter"].Duplicates))
	return idempotency{without: without["full-jitter"], with: with["full-jitter"]}, nil
}

// calming is whether telling clients the truth about when to come back calms them: alone
// (a key each) and in a crowd sharing one key.
type calming struct {
	refusedAgain *float64 // a key per client, honouring Retry-After
	crowdPeak    float64  // one shared key, honouring Retry-After without jitter
	jitterPeak   float64  // … with full jitter on top
	crowd        int
}

// Judge: does not hold when clients told the truth are still refused again (retryTruth).
// Otherwise holds when a crowd honouring Retry-After without jitter makes no wave
// waveRatio taller than with jitter, and depends when it does: the truth calms clients
// that have a limit each, not a crowd that shares one.
func (m calming) Judge() Judgement {
	if m.refusedAgain == nil || *m.refusedAgain > retryTruth {
		return Judgement{DoesNotHold, "clients that waited as told were refused again"}
	}
	herd := m.crowdPeak >= waveRatio*m.jitterPeak
	if !herd {
		return Judgement{Holds, ""}
	}
	return Judgement{Depends, either(
		[]string{fmt.Sprintf("for clients with a limit each (refused again on %s of their retries)", pct(*m.refusedAgain))},
		[]string{fmt.Sprintf("for a crowd sharing one key: %d clients that all honour the same Retry-After wake together, %.0f retries in one 10 ms bin against %.0f with full jitter", m.crowd, m.crowdPeak, m.jitterPeak)})}
}

func (m calming) Text() string {
	again := "none measured"
	if m.refusedAgain != nil {
		again = pct(*m.refusedAgain)
	}
	return fmt.Sprintf("clients with a limit each that wait exactly what Retry-After says are refused again on %s of those retries; "+
		"in the storm, %d clients sharing one key that honour Retry-After (their own fixed backoff is shorter) send up to %.1f retries in one 10 ms bin, %.1f with full jitter instead",
		again, m.crowd, m.crowdPeak, m.jitterPeak)
}

func measureCalming(s *session) (Measurement, error) {
	truth, ev, err := s.backoff(truthArgs...)
	if err != nil {
		return nil, err
	}
	m := calming{refusedAgain: refusedAgain(truth)}
	citeShares(ev, truth)
	storm, ev, err := s.backoff(stormArgs...)
	if err != nil {
		return nil, err
	}
	citeStrategies(ev, storm, capsStrategy, "full-jitter")
	m.crowdPeak, m.jitterPeak, m.crowd = storm[capsStrategy].PeakArrivals, storm["full-jitter"].PeakArrivals, storm[capsStrategy].Clients
	return m, nil
}
