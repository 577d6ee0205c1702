package claims

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
)

// tokenBurstArgs runs token-burst (a bucket of 20 refilled at 10/s: 21 requests at once
// after a quiet start, then 30/s for a minute) under rlsim's bucket and the notes' consume.
var tokenBurstArgs = []string{"compare", "--scenario", "token-burst", "--algorithms", "token-bucket,notes-token-bucket", "--decisions", "decisions.csv"}

// tokenBurst is what the token bucket did with a burst after a quiet start and then a flood.
type tokenBurst struct {
	burst                    int64   // capacity b
	rate                     float64 // refill r, per second
	burstSent, burstAdmitted int64   // at the burst's instant
	floodAdmitted            int64   // after it
	flood                    time.Duration
}

// rateFloor is how close to r the flood's admitted rate must come for "the long-run rate
// is r" to be shown (it may not exceed b + r·T).
const rateFloor = 0.99

// Judge: holds when the bucket passed exactly b at once and the flood got between
// rateFloor·r·T and b + r·T through; does not hold otherwise.
func (m tokenBurst) Judge() Judgement {
	secs := m.flood.Seconds()
	most := float64(m.burst) + m.rate*secs
	switch {
	case m.burstAdmitted != m.burst:
		return Judgement{DoesNotHold, fmt.Sprintf("%d passed at once, not the bucket's %d", m.burstAdmitted, m.burst)}
	case float64(m.floodAdmitted) > most:
		return Judgement{DoesNotHold, fmt.Sprintf("%d admitted over %s, above b + r·T = %.0f", m.floodAdmitted, m.flood, most)}
	case float64(m.floodAdmitted) < rateFloor*m.rate*secs:
		return Judgement{DoesNotHold, fmt.Sprintf("%.2f/s admitted, below the refill of %g/s", float64(m.floodAdmitted)/secs, m.rate)}
	}
	return Judgement{Holds, fmt.Sprintf("over a span T the bucket adds at most its %d to r·T", m.burst)}
}

func (m tokenBurst) Text() string {
	return fmt.Sprintf("a bucket of %d refilled at %g/s: %d of %d admitted at once after a quiet start; then %d admitted over %s of a flood at three times the rate = %.2f/s (b + r·T allows %.0f)",
		m.burst, m.rate, m.burstAdmitted, m.burstSent, m.floodAdmitted, m.flood.Round(time.Second), float64(m.floodAdmitted)/m.flood.Seconds(),
		float64(m.burst)+m.rate*m.flood.Seconds())
}

func measureTokenBurst(s *session) (Measurement, error) {
	rep, ev, err := s.report(tokenBurstArgs...)
	if err != nil {
		return nil, err
	}
	ds, err := s.decisions(tokenBurstArgs...)
	if err != nil {
		return nil, err
	}
	// The burst is the instant with the most requests; the flood, every request after it.
	at := map[time.Duration]int64{}
	var burstAt time.Duration
	for _, d := range ds {
		if d.algorithm == algorithms.TokenBucketName {
			at[d.at]++
			if at[d.at] > at[burstAt] {
				burstAt = d.at
			}
		}
	}
	m := tokenBurst{burst: rep.Policy.Burst, rate: float64(rep.Policy.Limit) / time.Duration(rep.Policy.Window).Seconds()}
	var first, last time.Duration = -1, 0
	for _, d := range ds {
		switch {
		case d.algorithm != algorithms.TokenBucketName:
		case d.at == burstAt:
			m.burstSent++
			if d.allowed {
				m.burstAdmitted++
			}
		case d.at > burstAt:
			if first < 0 {
				first = d.at
			}
			last = d.at
			if d.allowed {
				m.floodAdmitted++
			}
		}
	}
	m.flood = last - first
	x, err := result(rep, algorithms.TokenBucketName)
	if err != nil {
		return nil, err
	}
	ev.cite(algorithms.TokenBucketName, cellInt(x.Requests), cellInt(x.Admitted), cellInt(x.Rejected))
	return m, nil
}

// lazyState is the per-key state of the token buckets, as each counts its own.
type lazyState struct {
	rlsim, notes float64 // state_bytes_per_key
}

// twoNumbers is the size of two 8-byte numbers: tokens and the time of the last update.
const twoNumbers = 16

// Judge: holds when both buckets keep at most twoNumbers bytes per key; holds with a
// caveat up to twice that; otherwise does not hold.
func (m lazyState) Judge() Judgement {
	most := max(m.rlsim, m.notes)
	switch {
	case most <= twoNumbers:
		return Judgement{Holds, "nothing runs between requests: a key's tokens are worked out when its next request arrives"}
	case most <= 2*twoNumbers:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("%.0f B per key", most)}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("%.0f B per key", most)}
}

func (m lazyState) Text() string {
	return fmt.Sprintf("bytes of state per key, as each limiter counts its own: rlsim's token bucket %.0f (tokens, last update), the notes' consume %.0f (tokens, updatedAt)", m.rlsim, m.notes)
}

func measureLazyState(s *session) (Measurement, error) {
	rep, ev, err := s.report(tokenBurstArgs...)
	if err != nil {
		return nil, err
	}
	var m lazyState
	for _, p := range []struct {
		alg string
		to  *float64
	}{{algorithms.TokenBucketName, &m.rlsim}, {algorithms.NotesTokenBucketName, &m.notes}} {
		x, err := result(rep, p.alg)
		if err != nil {
			return nil, err
		}
		*p.to = x.StateBytesPerKey
		ev.cite(p.alg, cellInt(x.Requests), cellFixed(x.StateBytesPerKey, 0))
	}
	return m, nil
}

// bucketBound is the most the worst-case search got through a token bucket in windows of
// several lengths T, against b + r·T.
type bucketBound struct {
	spans []boundAt
}

type boundAt struct {
	t     time.Duration
	found int64
	bound float64
}

// Judge: does not hold when any span admitted more than b + r·T; holds when the bound is
// reached at some span; holds with a caveat when it never is.
func (m bucketBound) Judge() Judgement {
	reached := false
	for _, p := range m.spans {
		if float64(p.found) > p.bound {
			return Judgement{DoesNotHold, fmt.Sprintf("%d in a window of %s, above b + r·T = %g", p.found, p.t, p.bound)}
		}
		reached = reached || float64(p.found) == p.bound
	}
	if !reached {
		return Judgement{HoldsWithCaveat, "the search never reached the bound"}
	}
	return Judgement{Holds, ""}
}

func (m bucketBound) Text() string {
	var parts []string
	for _, p := range m.spans {
		parts = append(parts, fmt.Sprintf("T = %s: %d (bound %g)", p.t, p.found, p.bound))
	}
	return "the most the worst-case search gets through a token bucket of 100 refilled at 100/min in one window of length T: " + strings.Join(parts, ", ")
}

func measureBucketBound(s *session) (Measurement, error) {
	w, ev, err := s.worstCase("worst-case", "--algorithms", algorithms.TokenBucketName, "--spans", "0.25,1,4")
	if err != nil {
		return nil, err
	}
	if len(w.Results) != 1 {
		return nil, fmt.Errorf("worst-case: %d results", len(w.Results))
	}
	var m bucketBound
	for _, c := range w.Results[0].Curve {
		m.spans = append(m.spans, boundAt{t: time.Duration(c.T), found: c.WorstAdmitted, bound: c.Bound})
		ev.cite(time.Duration(c.T).String(), fmt.Sprintf("%d (%s)", c.WorstAdmitted, formatBound(c.Bound, true)))
	}
	return m, nil
}

// consumeRetry is what a client that comes back when the notes' consume says gets, for a
// request the bucket can hold and for one it cannot.
type consumeRetry struct {
	capacity                 int64
	spacing                  string // seconds between the tries, as Retry-After prints them
	fits, tooBig             int64  // the two costs tried
	fitsRetry, tooBigRetry   string
	fitsStatus, tooBigStatus int    // the status at the retry, tried when Retry-After said
	tooBigRetryAgain         string // Retry-After of the refused retry
	rlsimStatus              int    // rlsim's token bucket for the request that cannot fit
	rlsimRetry               string // its Retry-After, "" when it sends none
}

// Judge two regimes: a cost within the capacity (the retry at Retry-After passes) and a
// cost above it (it passes, or the answer says it never will). Both: holds; the first
// only: depends; neither: does not hold.
func (m consumeRetry) Judge() Judgement {
	fits := m.fitsStatus == 200
	tooBig := m.tooBigStatus == 200 || m.tooBigRetry == ""
	fitsText := fmt.Sprintf("when the cost fits the bucket (cost %d, capacity %d: back after %s s, admitted)", m.fits, m.capacity, m.fitsRetry)
	tooBigText := fmt.Sprintf("when it exceeds it (cost %d: told %s s, refused again and told %s s, for ever)", m.tooBig, m.tooBigRetry, m.tooBigRetryAgain)
	switch {
	case m.fitsRetry != m.spacing || m.tooBigRetry != "" && m.tooBigRetry != m.spacing:
		return Judgement{NotCheckable, fmt.Sprintf("the retries came %s s after the tries, not when Retry-After said (%s s, %s s)", m.spacing, m.fitsRetry, m.tooBigRetry)}
	case fits && tooBig:
		return Judgement{Holds, ""}
	case fits:
		return Judgement{Depends, either([]string{fitsText}, []string{tooBigText})}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("a request of cost %d retried after %s s got %d", m.fits, m.fitsRetry, m.fitsStatus)}
}

func (m consumeRetry) Text() string {
	rlsim := "no Retry-After"
	if m.rlsimRetry != "" {
		rlsim = "Retry-After " + m.rlsimRetry
	}
	return fmt.Sprintf("the notes' consume, bucket %d refilled at 10/s, each retry sent when Retry-After said: a request of cost %d refused with Retry-After %s passes at the retry (%d); "+
		"one of cost %d is told %s, refused again at the retry (%d) and told %s — Math.ceil of a wait for tokens the bucket can never hold. "+
		"rlsim's token bucket answers that request %d with %s: waiting would not help",
		m.capacity, m.fits, m.fitsRetry, m.fitsStatus, m.tooBig, m.tooBigRetry, m.tooBigStatus, m.tooBigRetryAgain, m.rlsimStatus, rlsim)
}

// consumeArgs is `rlsim headers` on a bucket of 20 refilled at 10/s for n requests of a
// cost, one second apart.
func consumeArgs(algorithm string, cost int64, n int) []string {
	args := []string{"headers", "--algorithm", algorithm, "--limit", "10", "--window", "1s", "--burst", "20", "--cost", cellInt(cost)}
	if n > 1 {
		args = append(args, "--requests", fmt.Sprint(n), "--spread", (time.Duration(n-1) * time.Second).String())
	} else {
		args = append(args, "--requests", "1")
	}
	return args
}

func measureConsumeRetry(s *session) (Measurement, error) {
	m := consumeRetry{capacity: 20, fits: 20, tooBig: 30, spacing: "1"}
	cite := func(ev *Evidence, r response) {
		ev.cite(fmt.Sprintf("HTTP/1.1 %d", r.Status))
		if ra := r.Headers["Retry-After"]; ra != "" {
			ev.cite("Retry-After: " + ra)
		}
	}
	// Cost 20: the first passes and empties the bucket; the second, a second later, finds
	// 10 tokens and is told to come back; the third comes back when told.
	r, ev, err := s.headers(consumeArgs(algorithms.NotesTokenBucketName, m.fits, 2)...)
	if err != nil {
		return nil, err
	}
	cite(ev, r)
	m.fitsRetry = r.Headers["Retry-After"]
	if r, ev, err = s.headers(consumeArgs(algorithms.NotesTokenBucketName, m.fits, 3)...); err != nil {
		return nil, err
	}
	cite(ev, r)
	m.fitsStatus = r.Status
	// Cost 30 never fits a bucket of 20.
	if r, ev, err = s.headers(consumeArgs(algorithms.NotesTokenBucketName, m.tooBig, 1)...); err != nil {
		return nil, err
	}
	cite(ev, r)
	m.tooBigRetry = r.Headers["Retry-After"]
	if r, ev, err = s.headers(consumeArgs(algorithms.NotesTokenBucketName, m.tooBig, 2)...); err != nil {
		return nil, err
	}
	cite(ev, r)
	m.tooBigStatus, m.tooBigRetryAgain = r.Status, r.Headers["Retry-After"]
	if r, ev, err = s.headers(consumeArgs(algorithms.TokenBucketName, m.tooBig, 1)...); err != nil {
		return nil, err
	}
	cite(ev, r)
	m.rlsimStatus, m.rlsimRetry = r.Status, r.Headers["Retry-After"]
	return m, nil
}

// pageLoads compares what a strict window and a token bucket did to page loads that fan
// out to 8 parallel calls.
type pageLoads struct {
	pageCount              int64
	strict, window, bucket float64 // broken page loads: sliding-log, sliding-window, token-bucket
	strictPeak, bucketPeak float64 // long_run_peak: the most one user averaged over 10 windows
	limit                  float64 // per second
}

// The thresholds of "breaks normal page loads": a strict window breaks at least
// brokenMany of them, the bucket at most brokenFew.
const (
	brokenMany = 0.10
	brokenFew  = 0.01
)

// Judge: holds when the strict window breaks brokenMany, the bucket at most brokenFew, and
// no user averages the limit under either; holds with a caveat when the strict window
// only breaks more than the bucket; otherwise does not hold.
func (m pageLoads) Judge() Judgement {
	within := m.strictPeak <= m.limit && m.bucketPeak <= m.limit
	switch {
	case m.strict >= brokenMany && m.bucket <= brokenFew && within:
		return Judgement{Holds, ""}
	case m.strict > m.bucket:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("the strict window breaks %s, the bucket %s", pct(m.strict), pct(m.bucket))}
	}
	return Judgement{DoesNotHold, ""}
}

func (m pageLoads) Text() string {
	return fmt.Sprintf("of %d page loads, broken (a request refused): sliding-log %s, sliding-window %s, token-bucket of burst 20 %s; "+
		"the most one user averaged over 10 s: %.1f/s (sliding-log) and %.1f/s (token-bucket) against the %g/s limit",
		m.pageCount, pct(m.strict), pct(m.window), pct(m.bucket), m.strictPeak, m.bucketPeak, m.limit)
}

func measurePageLoads(s *session) (Measurement, error) {
	rep, ev, err := s.report(pageLoadArgs...)
	if err != nil {
		return nil, err
	}
	got := map[string]report.Result{}
	for _, a := range []string{algorithms.SlidingLogName, algorithms.SlidingWindowName, algorithms.TokenBucketName} {
		x, err := result(rep, a)
		if err != nil {
			return nil, err
		}
		if x.BrokenPageLoads == nil || x.LongRunPeak == nil {
			return nil, fmt.Errorf("page-load: %s measured no page loads", a)
		}
		got[a] = x
		ev.cite(a, cellInt(x.Requests), report.Percent(*x.BrokenPageLoads), cellFixed(*x.LongRunPeak, 1))
	}
	return pageLoads{
		pageCount: got[algorithms.SlidingLogName].PageLoads,
		strict:    *got[algorithms.SlidingLogName].BrokenPageLoads, window: *got[algorithms.SlidingWindowName].BrokenPageLoads, bucket: *got[algorithms.TokenBucketName].BrokenPageLoads,
		strictPeak: *got[algorithms.SlidingLogName].LongRunPeak, bucketPeak: *got[algorithms.TokenBucketName].LongRunPeak,
		limit: float64(rep.Policy.Limit) / time.Duration(rep.Policy.Window).Seconds(),
	}, nil
}

// costWeighting is what weighting requests by cost did to a user who only asks for the
// dearest endpoint, against counting calls.
type costWeighting struct {
	hogCost                    int64
	hogSent, weighted, counted int64   // reports admitted: by the cost-aware bucket, by a call counter
	legitRefused               float64 // the ordinary users' refusals under the bucket
	limit                      int64
}

// The thresholds: weighting holds the hog to at most hogShare of its reports, refuses at
// most legitShare of the others' requests, and a call counter lets at least countGap times
// as many reports through.
const (
	hogShare   = 0.25
	legitShare = 0.01
	countGap   = 2
)

// Judge: holds when all three thresholds are met; holds with a caveat when the hog is held
// but ordinary users pay more than legitShare or a call counter does no worse; otherwise
// does not hold.
func (m costWeighting) Judge() Judgement {
	held := float64(m.weighted) <= hogShare*float64(m.hogSent)
	spared := m.legitRefused <= legitShare
	gap := m.counted >= countGap*m.weighted
	switch {
	case held && spared && gap:
		return Judgement{Holds, ""}
	case held:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("ordinary users refused %s; a call counter let %d through", pct(m.legitRefused), m.counted)}
	}
	return Judgement{DoesNotHold, fmt.Sprintf("the bucket let %d of %d reports through", m.weighted, m.hogSent)}
}

func (m costWeighting) Text() string {
	return fmt.Sprintf("%d units per minute per user, lists cost 1 and reports %d: a user sending only reports gets %d of %d through a token bucket that counts cost "+
		"(ordinary users refused %s), and %d of %d through the notes' two-counter script, which counts calls",
		m.limit, m.hogCost, m.weighted, m.hogSent, pct(m.legitRefused), m.counted, m.hogSent)
}

func measureCostWeighting(s *session) (Measurement, error) {
	rep, ev, err := s.report(costWeightedArgs...)
	if err != nil {
		return nil, err
	}
	actor, cost, err := costHog()
	if err != nil {
		return nil, err
	}
	m := costWeighting{hogCost: cost, limit: rep.Policy.Limit}
	bucket, err := result(rep, algorithms.TokenBucketName)
	if err != nil {
		return nil, err
	}
	if m.weighted, m.hogSent, err = attacker(bucket, actor); err != nil {
		return nil, err
	}
	m.legitRefused = optional(bucket.LegitRejectRate)
	counter, err := result(rep, algorithms.NotesSlidingWindowName)
	if err != nil {
		return nil, err
	}
	if m.counted, _, err = attacker(counter, actor); err != nil {
		return nil, err
	}
	ev.cite(algorithms.TokenBucketName, cellInt(bucket.Requests), report.Percent(m.legitRefused))
	ev.cite(algorithms.TokenBucketName, fmt.Sprintf("%d/%d", m.weighted, m.hogSent))
	ev.cite(algorithms.NotesSlidingWindowName, fmt.Sprintf("%d/%d", m.counted, m.hogSent))
	return m, nil
}
