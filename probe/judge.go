package probe

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/traffic"
)

// Result is what a probe measured. The promise metrics keep the names of DESIGN.md and
// come from report.Collector, the reference every simulation is judged by, fed with the
// times requests were sent.
type Result struct {
	Requests int64 `json:"requests"`
	Admitted int64 `json:"admitted"`
	Rejected int64 `json:"rejected"`
	// Other counts requests with no verdict: a transport error, a timeout, or a status
	// neither 2xx nor one of the refused codes. They are left out of the reference.
	Other              int64   `json:"other"`
	PeakWindowAdmitted int64   `json:"peak_window_admitted"`
	OverAdmission      float64 `json:"over_admission"`
	FalseAllow         int64   `json:"false_allow"`
	FalseReject        int64   `json:"false_reject"`
	// The rates divide by Requests, every request sent.
	FalseAllowRate  float64 `json:"false_allow_rate"`
	FalseRejectRate float64 `json:"false_reject_rate"`
	Keys            int     `json:"keys"`
	// LateMSMax and LateMSP99 are how long after it was due a planned request was sent.
	LateMSMax float64 `json:"late_ms_max"`
	LateMSP99 float64 `json:"late_ms_p99"`
	// AnswerMSMax is the longest a request with a verdict waited for its response: the
	// target decided it somewhere between its sending and then (a queueing limiter's
	// delay included).
	AnswerMSMax float64 `json:"answer_ms_max"`

	Headers HeaderChecks `json:"headers"`
	// OtherStatuses counts the statuses of Other by code (0: no response), and
	// FirstError is the first transport error.
	OtherStatuses map[int]int64 `json:"other_statuses,omitempty"`
	FirstError    string        `json:"first_error,omitempty"`
}

// HeaderChecks hold the target's rate-limit headers to what happened next. A check is
// made only where its answer is certain: the request judged was sent after the previous
// request of its key had been answered, and nothing else of that key was in flight since
// that previous request was sent, so no decision the probe cannot see came between the
// header and the request it is held to.
type HeaderChecks struct {
	// WithQuota counts responses that carried a quota (RateLimit, RateLimit-Remaining or
	// X-RateLimit-Remaining).
	WithQuota int64 `json:"with_quota"`
	// Remaining: a request whose cost was within the remaining units the previous
	// response of its key announced must be admitted (remaining only grows while a key
	// is left alone). Broken counts those refused.
	RemainingChecked int64 `json:"remaining_checked"`
	RemainingBroken  int64 `json:"remaining_broken"`
	// Reset: a request sent at least the previous response's reset (t) after that
	// response arrived finds the quota whole and must be admitted (when its cost is
	// within the limit).
	ResetChecked int64 `json:"reset_checked"`
	ResetBroken  int64 `json:"reset_broken"`
	// Retry-After (only with HonorRetryAfter): the retries sent when a refusal's
	// Retry-After said, how many got in, and among those made alone (no other request of
	// the key between the refusal and the retry) how many were refused again.
	RetriesSent       int64 `json:"retries_sent"`
	RetriesAdmitted   int64 `json:"retries_admitted"`
	RetryAfterChecked int64 `json:"retry_after_checked"`
	RetryAfterBroken  int64 `json:"retry_after_broken"`
}

// verdict of one exchange.
const (
	noVerdict = iota
	admitted
	refused
)

// Judge measures exchanges against policy's promise, "no more than Limit units in any
// trailing Window", judged on the times the requests were sent; refusedCodes are the
// statuses that count as refusals.
func Judge(exchanges []Exchange, policy algorithms.Policy, refusedCodes []int) Result {
	var res Result
	isRefused := map[int]bool{}
	for _, c := range refusedCodes {
		isRefused[c] = true
	}
	verdictOf := func(x *Exchange) int {
		switch {
		case x.Err != "" || x.Status == 0:
			return noVerdict
		case x.Status >= 200 && x.Status < 300:
			return admitted
		case isRefused[x.Status]:
			return refused
		}
		return noVerdict
	}

	// In the order sent; a retry never is sent before what it retries.
	order := make([]int, 0, len(exchanges))
	for i := range exchanges {
		if !exchanges[i].Unsent {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return exchanges[order[a]].Sent < exchanges[order[b]].Sent })

	col := report.NewCollector(policy.Limit, policy.Window, time.Second)
	ids := map[string]uint32{}
	var late []time.Duration
	for _, i := range order {
		x := &exchanges[i]
		res.Requests++
		id, ok := ids[x.Key]
		if !ok {
			id = uint32(len(ids))
			ids[x.Key] = id
		}
		if !x.Retry {
			late = append(late, max(x.Sent-x.Due, 0))
		}
		if x.HasQuota {
			res.Headers.WithQuota++
		}
		v := verdictOf(x)
		if v == noVerdict {
			res.Other++
			if res.OtherStatuses == nil {
				res.OtherStatuses = map[int]int64{}
			}
			res.OtherStatuses[x.Status]++
			if x.Err != "" && res.FirstError == "" {
				res.FirstError = x.Err
			}
			continue
		}
		res.AnswerMSMax = max(res.AnswerMSMax, ms(x.Received-x.Sent))
		col.Observe(id, int64(x.Sent), x.Cost, traffic.Legit, algorithms.Decision{Allowed: v == admitted})
	}
	m := col.Result(endpoint{keys: len(ids)})
	res.Admitted, res.Rejected = m.Admitted, m.Rejected
	res.PeakWindowAdmitted, res.OverAdmission = m.PeakWindowAdmitted, m.OverAdmission
	res.FalseAllow, res.FalseReject = m.FalseAllow, m.FalseReject
	if res.Requests > 0 {
		res.FalseAllowRate = float64(res.FalseAllow) / float64(res.Requests)
		res.FalseRejectRate = float64(res.FalseReject) / float64(res.Requests)
	}
	res.Keys = len(ids)
	if len(late) > 0 {
		slices.Sort(late)
		res.LateMSMax = ms(late[len(late)-1])
		res.LateMSP99 = ms(late[int(math.Ceil(0.99*float64(len(late))))-1])
	}
	res.Headers.check(exchanges, order, verdictOf, policy)
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// check fills the header checks; order lists the sent exchanges in the order sent.
func (h *HeaderChecks) check(exchanges []Exchange, order []int, verdictOf func(*Exchange) int, policy algorithms.Policy) {
	type keyState struct {
		prev int // the exchange of the key sent last, -1 before the first
		// quietBefore: every exchange of the key sent before prev was answered before
		// prev was sent.
		quietBefore bool
		// latestAnswer is the latest arrival of a response among those sent so far, with
		// no response (a timeout, an error) counting as never.
		latestAnswer time.Duration
	}
	never := time.Duration(math.MaxInt64)
	// nextSent[i] is when the key's next exchange after i (in the order sent) left: a
	// request sent before x was answered may reach the target first and take what x's
	// check counts on, so x is judged only when it had the key to itself until answered.
	nextSent := make(map[int]time.Duration, len(order))
	lastOf := map[string]int{}
	for _, i := range order {
		if p, ok := lastOf[exchanges[i].Key]; ok {
			nextSent[p] = exchanges[i].Sent
		}
		lastOf[exchanges[i].Key] = i
	}
	keys := map[string]*keyState{}
	for _, i := range order {
		x := &exchanges[i]
		v := verdictOf(x)
		if x.Retry {
			h.RetriesSent++
			if v == admitted {
				h.RetriesAdmitted++
			}
		}
		k := keys[x.Key]
		if k == nil {
			k = &keyState{prev: -1}
			keys[x.Key] = k
		}
		if p := k.prev; p >= 0 && k.quietBefore && v != noVerdict {
			prev := &exchanges[p]
			next, later := nextSent[i]
			alone := verdictOf(prev) != noVerdict && prev.Received <= x.Sent && (!later || next >= x.Received)
			if alone && prev.HasQuota {
				if prev.Quota.Remaining >= x.Cost {
					h.RemainingChecked++
					if v == refused {
						h.RemainingBroken++
					}
				}
				if x.Sent-prev.Received >= prev.Quota.Reset && x.Cost <= policy.Limit {
					h.ResetChecked++
					if v == refused {
						h.ResetBroken++
					}
				}
			}
			if alone && x.Retry && x.RetryOf == p {
				h.RetryAfterChecked++
				if v == refused {
					h.RetryAfterBroken++
				}
			}
		}
		answered := x.Received
		if verdictOf(x) == noVerdict && x.Err != "" {
			answered = never
		}
		k.quietBefore = k.prev < 0 || k.latestAnswer <= x.Sent
		k.latestAnswer = max(k.latestAnswer, answered)
		k.prev = i
	}
}

// endpoint stands for the target where report.Collector.Result asks for the limiter it
// measured: Result reads its name, keys and state, and never calls Allow.
type endpoint struct{ keys int }

var _ algorithms.Limiter = endpoint{}

func (endpoint) Name() string                                   { return "endpoint" }
func (endpoint) Allow(uint32, int64, int64) algorithms.Decision { return algorithms.Decision{} }
func (e endpoint) Keys() int                                    { return e.keys }
func (endpoint) StateBytes() int64                              { return 0 }
