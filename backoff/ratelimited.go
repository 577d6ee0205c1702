package backoff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// Hiccup is a window in which the API's capacity wobbles: from Start for Duration every
// request that passes the limit fails with 503 (Kind "503"), or is carried out but
// answered SlowBy late (Kind "slow"), which makes clients with a timeout retry work that
// was done.
type Hiccup struct {
	Start, Duration time.Duration
	Kind            string
	SlowBy          time.Duration
	// RetryAfter is the Retry-After the 503s carry (0: none, the usual case when a
	// server does not know how long it will be down).
	RetryAfter time.Duration
}

// HiccupKinds lists the kinds of Hiccup.
var HiccupKinds = []string{"503", "slow"}

// in reports whether t falls in the hiccup.
func (h Hiccup) in(t time.Duration) bool {
	return h.Duration > 0 && t >= h.Start && t < h.Start+h.Duration
}

// RateLimited is the model of clients against an API guarded by one of rlsim's limiters.
// Every client has one job; all start at Start (spread evenly over Spread). A 503 Hiccup
// is an outage in front of the API (the balancer answers while the service is down), so
// the limiter does not see those requests. Otherwise the limit is checked first, before
// any other work, as a server should: a refusal is the 429 of the response package, with
// a Retry-After the client may honour. Admitted requests succeed, late during a slow
// Hiccup. Every hop takes |Normal(HopMean, HopStdDev)|.
//
// A request reaches the server through the run's event loop at its arrival time, send +
// forward hop, and is decided then: hops that reorder requests on the wire do not reorder
// them at the limiter, which sees time only move forward. The reply leaves after the
// server's time (the leaky bucket's queueing delay, a slow Hiccup's SlowBy) and takes the
// return hop; whether the Hiccup applies is judged at the arrival.
//
// The server carries out each request it accepts outside a 503 hiccup. A request carried
// out again for the same job and request is a duplicate, unless the client sent an
// idempotency key, in which case the server answers the repeat from its record without
// running it.
type RateLimited struct {
	Algorithm string
	Policy    algorithms.Policy
	// PerClient gives each client its own key (a per-user limit); otherwise all share one
	// (the API's capacity).
	PerClient bool
	// Requests is each client's job size; NonIdempotent marks its requests.
	Requests      int
	NonIdempotent bool
	Start, Spread time.Duration
	Hiccup        Hiccup
	Retry         traffic.Retry // Backoff is set per run
	// RetryAfterDate sends Retry-After as an HTTP-date instead of seconds.
	RetryAfterDate bool
	// RetryAfterMs adds Retry-After-Ms, the wait to the millisecond, to every response
	// that carries Retry-After; clients that honour Retry-After read it first.
	RetryAfterMs bool
	// Errors is the error mix of the API's answers to admitted requests.
	Errors ErrorMix
	// Processes is the number of client processes the clients belong to (0: one per
	// client); the strategy's policies keep one state per process.
	Processes          int
	HopMean, HopStdDev time.Duration
	// Epoch is the wall-clock time of t=0 (fixed windows align to it, HTTP-dates use it).
	Epoch time.Time
	Bin   time.Duration
}

// DefaultRateLimited is the retry storm of the design notes: 1000 clients (set by the
// experiment) all refused at once by a half-second hiccup of 503s at t=0, in front of a
// token bucket of 100 per second shared by all.
var DefaultRateLimited = RateLimited{
	Algorithm: algorithms.TokenBucketName,
	Policy:    algorithms.Policy{Limit: 100, Window: time.Second},
	Requests:  1,
	Hiccup:    Hiccup{Duration: 500 * time.Millisecond, Kind: "503"},
	HopMean:   10 * time.Millisecond, HopStdDev: 2 * time.Millisecond,
	Epoch: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC),
	Bin:   10 * time.Millisecond,
}

var _ Model = RateLimited{}

// Name returns "rate-limited".
func (RateLimited) Name() string { return "rate-limited" }

// String describes the setup.
func (m RateLimited) String() string {
	key := "one shared key"
	if m.PerClient {
		key = "a key per client"
	}
	s := fmt.Sprintf("%s %d per %s (burst %d), %s, %d request(s) per client", m.Algorithm, m.Policy.Limit, m.Policy.Window, m.Policy.EffectiveBurst(), key, max(m.Requests, 1))
	if m.NonIdempotent {
		s += " (non-idempotent"
		if m.Retry.IdempotencyKeys {
			s += ", with idempotency keys"
		}
		s += ")"
	}
	if m.Hiccup.Duration > 0 {
		if m.Hiccup.Kind == "slow" {
			s += fmt.Sprintf(", replies %s slower from %s for %s", m.Hiccup.SlowBy, m.Hiccup.Start, m.Hiccup.Duration)
		} else {
			s += fmt.Sprintf(", 503s from %s for %s", m.Hiccup.Start, m.Hiccup.Duration)
		}
	}
	if len(m.Errors) > 0 {
		s += ", errors " + m.Errors.String()
	}
	if m.RetryAfterMs {
		s += ", Retry-After-Ms"
	}
	s += retryString(m.Retry, m.Processes)
	return s
}

// retryString describes the clients' retry settings for a model's String.
func retryString(r traffic.Retry, processes int) string {
	var s string
	if processes > 0 {
		s += fmt.Sprintf(", %d client process%s", processes, map[bool]string{true: "es"}[processes > 1])
	}
	if r.RetryAllErrors {
		s += ", clients retry every error"
	}
	if r.Timeout > 0 {
		s += fmt.Sprintf(", client timeout %s", r.Timeout)
	}
	if r.MaxAttempts > 0 {
		s += fmt.Sprintf(", at most %d attempts", r.MaxAttempts)
	}
	if r.Deadline > 0 {
		s += fmt.Sprintf(", deadline %s", r.Deadline)
	}
	return s
}

// Validate reports a setup that cannot run.
func (m RateLimited) Validate() error {
	if _, err := algorithms.New(m.Algorithm, m.Policy); err != nil {
		return err
	}
	if m.Hiccup.Duration < 0 || m.Hiccup.Start < 0 || m.Hiccup.SlowBy < 0 || m.Hiccup.RetryAfter < 0 {
		return fmt.Errorf("hiccup times must not be negative")
	}
	if m.Hiccup.Kind != "503" && m.Hiccup.Kind != "slow" {
		return fmt.Errorf("unknown hiccup kind %q (want 503 or slow)", m.Hiccup.Kind)
	}
	if m.Start < 0 || m.Spread < 0 {
		return fmt.Errorf("start and spread must not be negative")
	}
	if m.Processes < 0 {
		return fmt.Errorf("processes must not be negative")
	}
	return m.Errors.Validate()
}

// Run implements Model.
func (m RateLimited) Run(strategy traffic.Strategy, clients int, seed uint64) RunStats {
	lim, err := algorithms.New(m.Algorithm, m.Policy)
	if err != nil {
		// Validate rejects what New rejects; a model that was not validated fails loudly.
		panic(err)
	}
	return m.run(lim, strategy, clients, seed)
}

// run is Run against lim, which the tests wrap to watch what the limiter is asked.
func (m RateLimited) run(lim algorithms.Limiter, strategy traffic.Strategy, clients int, seed uint64) RunStats {
	rng := sim.NewRNG(seed, sim.BackoffStream)
	api := &api{m: m, lim: lim, rng: rng, seed: seed, done: map[uint64]bool{}, ran: map[[2]int]int{}}
	pop := &traffic.Clients{Server: api, Retry: m.Retry, Epoch: m.Epoch, Bin: m.Bin, RNG: rng, Processes: m.Processes}
	st := runClients(pop, strategy, clients, m.Start, m.Spread, traffic.Job{Requests: m.Requests, NonIdempotent: m.NonIdempotent})
	st.Duplicates = api.duplicates
	return st
}

// runClients runs clients clients of pop with strategy, all with job, starting at start
// or evenly over spread, and returns what they measured.
func runClients(pop *traffic.Clients, strategy traffic.Strategy, clients int, start, spread time.Duration, job traffic.Job) RunStats {
	pop.Retry.Backoff, pop.Retry.Policies = strategy.Backoff, strategy.Policies
	var loop sim.Loop
	for i := range clients {
		job.Start = start
		if clients > 1 && spread > 0 {
			job.Start += time.Duration(float64(spread) * float64(i) / float64(clients-1))
		}
		pop.Add(&loop, job)
	}
	loop.Run(math.MaxInt64)
	s := pop.Stats
	return RunStats{
		Calls: s.Calls, Completion: s.Completion, ClientCompletion: s.ClientCompletion,
		Attempts: s.Arrivals, Retries: s.Retries, GiveUps: s.GiveUps,
		HonouredRetries: s.HonouredRetries, HonouredRefused: s.HonouredRefused,
		Requests: s.Requests, Wasted: s.Calls - s.Succeeded, Withheld: s.Withheld, Failed: s.Failed, RetriedWrong: s.RetriedWrongly,
	}
}

// api is the server side of a RateLimited run.
type api struct {
	m          RateLimited
	lim        algorithms.Limiter
	rng        *rand.Rand
	seed       uint64
	done       map[uint64]bool // idempotency keys of requests carried out
	ran        map[[2]int]int  // times each (client, request) was carried out
	duplicates int64
}

func (a *api) hop() time.Duration {
	// Rounded product: no FMA, the same delays on every platform (see occWorld.hop).
	return time.Duration(math.Abs(float64(a.m.HopMean) + float64(a.rng.NormFloat64()*float64(a.m.HopStdDev))))
}

// Forward implements traffic.Server: the hop to the server.
func (a *api) Forward(time.Duration, *traffic.Attempt) time.Duration { return a.hop() }

// Serve implements traffic.Server: attempt at arrives now, in arrival order.
func (a *api) Serve(now time.Duration, at *traffic.Attempt) traffic.Reply {
	key := uint32(0)
	if a.m.PerClient {
		key = uint32(at.Client)
	}
	back := a.hop()
	h := a.m.Hiccup
	if h.in(now) && h.Kind == "503" {
		return traffic.Reply{Response: a.overloaded(h.RetryAfter), Latency: back}
	}
	policy := response.Policy{Name: "api", Policy: a.m.Policy}
	d := a.lim.Allow(key, a.m.Epoch.UnixNano()+int64(now), 1)
	if !d.Allowed {
		r := response.For(d, policy, response.Headers{})
		if a.m.RetryAfterMs {
			r.SetRetryAfterMs(d.RetryAfter)
		}
		if a.m.RetryAfterDate {
			r.RetryAfterDate(a.m.Epoch.Add(now))
		}
		return traffic.Reply{Response: r, Latency: back}
	}
	if e, ok := a.m.Errors.pick(a.seed, at, a.rng); ok {
		// The API checked the limit, then failed the request: nothing was carried out.
		r := response.Response{Status: e.Status, Header: http.Header{}}
		if e.Status == http.StatusServiceUnavailable {
			r = a.overloaded(e.RetryAfter)
		} else if e.RetryAfter > 0 {
			r.Header.Set("Retry-After", strconv.FormatInt(response.Seconds(e.RetryAfter), 10))
			if a.m.RetryAfterMs {
				r.SetRetryAfterMs(e.RetryAfter)
			}
		}
		return traffic.Reply{Response: r, Latency: back}
	}
	if at.IdempotencyKey != 0 && a.done[at.IdempotencyKey] {
		// A repeat of work already done: answer from the record.
	} else {
		if at.IdempotencyKey != 0 {
			a.done[at.IdempotencyKey] = true
		}
		job := [2]int{at.Client, at.Request}
		a.ran[job]++
		if at.NonIdempotent && a.ran[job] > 1 {
			a.duplicates++
		}
	}
	latency := back + d.Delay
	if h.in(now) && h.Kind == "slow" {
		latency += h.SlowBy
	}
	return traffic.Reply{Response: response.For(d, policy, response.Headers{}), Latency: latency}
}

// overloaded is the 503 of a hiccup or of the error mix, with Retry-After (and
// Retry-After-Ms when the model sends it) if retryAfter > 0.
func (a *api) overloaded(retryAfter time.Duration) response.Response {
	r := response.Overloaded(retryAfter)
	if a.m.RetryAfterMs {
		r.SetRetryAfterMs(retryAfter)
	}
	return r
}
