package traffic

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/sim"
)

// Retry is how a closed-loop client retries a request that failed.
type Retry struct {
	// Backoff chooses the sleep after each failure.
	Backoff Backoff
	// MaxAttempts bounds the attempts per request, the first included (0: no bound).
	MaxAttempts int
	// Deadline bounds a whole job, from its start: a client does not start a sleep that
	// would end past it (0: no deadline).
	Deadline time.Duration
	// Timeout is how long a client waits for a reply before it counts the attempt as
	// failed and retries (0: it waits for ever). The server may still carry the request
	// out: that is how a retried payment runs twice.
	Timeout time.Duration
	// HonorRetryAfter makes the client wait max(backoff, Retry-After) when the response
	// carries a Retry-After it can parse (seconds or HTTP-date).
	HonorRetryAfter bool
	// IdempotencyKeys makes the client send one key per request, the same on every
	// attempt, so a server can recognise a repeat and not run it twice.
	IdempotencyKeys bool
	// Policies decide whether an attempt may be sent at all (a retry budget, a circuit
	// breaker…); each client process keeps its own state of each.
	Policies []PolicyMaker
	// RetryAllErrors makes the client retry every failure, also a client error (400,
	// 404…) that no retry can fix, as a naive client does; each such retry counts in
	// ClientStats.RetriedWrongly.
	RetryAllErrors bool
}

// Job is the work of one client: Requests requests, one after the other, from Start.
type Job struct {
	Start    time.Duration
	Requests int
	// NonIdempotent marks requests that must not run twice (a payment).
	NonIdempotent bool
}

// Attempt is one try of one request, as the server receives it.
type Attempt struct {
	// Client numbers the client, from 0, in the order clients were added.
	Client int
	// Request numbers the request within the client's job, from 0.
	Request int
	// Number counts the tries of this request, 1 for the first.
	Number        int
	NonIdempotent bool
	// IdempotencyKey is non-zero when the client sends one; it is the same on every try
	// of a request and unique across requests.
	IdempotencyKey uint64
}

// Reply is the server's answer to an attempt and how long it takes to reach the client
// from the moment the attempt reached the server: the server's own time (a queue, a slow
// backend) and the return hop.
type Reply struct {
	Response response.Response
	Latency  time.Duration
}

// Server is the far end of a population of closed-loop clients. It sees each attempt twice,
// as the attempt travels: Forward when the client sends it, at the send time, returns the
// network time to the server; Serve when it arrives, at the arrival time on the loop's
// clock, decides it. So a server decides attempts in the order they reach it, with now
// never going backwards, as a limiter requires, even when hops reorder what clients sent.
// Every attempt sent is served, also one its client has stopped waiting for (a timeout):
// the server does the work whether or not anyone reads the answer.
type Server interface {
	// Forward is the network time from the client to the server of attempt a, sent now.
	Forward(now time.Duration, a *Attempt) time.Duration
	// Serve decides attempt a, arriving now; the same *Attempt that Forward saw.
	Serve(now time.Duration, a *Attempt) Reply
}

// ClientStats is what a population of clients measured.
type ClientStats struct {
	// Calls counts attempts sent.
	Calls int64
	// Arrivals counts attempts reaching the server per bin of Clients.Bin, from t=0: the
	// herd, as the server sees it.
	Arrivals []int64
	// Retries counts the retries among them (attempts after the first of a request): the
	// waves a hiccup sets off, apart from the clients' own first requests.
	Retries []int64
	// Done, GiveUps and Failed count jobs finished, abandoned (attempt limit or deadline)
	// and ended by a final error (a 4xx other than 429).
	Done, GiveUps, Failed int64
	// Completion is the time the last job ended, however it ended.
	Completion time.Duration
	// HonouredRetries counts retries whose sleep Retry-After decided; HonouredRefused,
	// those of them refused by the limit (429) again. A truthful Retry-After keeps it 0
	// when each client has its own key.
	HonouredRetries, HonouredRefused int64
	// TimedOut counts attempts the client gave up waiting for.
	TimedOut int64
	// Requests counts the requests the clients set out to make (each first try, sent or
	// withheld); Calls ÷ Requests is the load amplification.
	Requests int64
	// Succeeded counts attempts whose 2xx reached a client still waiting for it; every
	// other call was wasted work.
	Succeeded int64
	// Withheld counts attempts (first tries or retries) a policy refused to send; each
	// ended its request, counted in GiveUps.
	Withheld int64
	// RetriedWrongly counts retries sent after a client error (RetryAllErrors).
	RetriedWrongly int64
	// ClientCompletion is, per client in the order they were added, how long its job
	// took: from its start until it ended, however it ended.
	ClientCompletion []time.Duration
}

// Clients is a population of closed-loop clients on one event loop; nothing runs outside
// the loop. Each client has one job and waits for one attempt at a time; an attempt is
// three events: the client sends it (and asks Server.Forward for the hop), it reaches the
// server (Server.Serve decides), the reply reaches the client. With a Retry.Timeout the
// client stops waiting at send + Timeout: a reply that would come at or after that instant
// is not delivered, but the attempt still reaches the server and is carried out.
type Clients struct {
	Server Server
	Retry  Retry
	// Epoch is the wall-clock time of t=0, for reading Retry-After as an HTTP-date.
	Epoch time.Time
	// Bin is the width of the Arrivals bins (default 10 ms).
	Bin time.Duration
	// RNG draws the jittered sleeps; the run's one random source.
	RNG *rand.Rand
	// Processes is the number of client processes the clients belong to, client i to
	// process i mod Processes; the policies of Retry keep one state per process (a retry
	// budget is shared by the clients of one process). 0 makes every client a process of
	// its own.
	Processes int
	Stats     ClientStats

	n     int
	procs [][]Policy
}

// Add schedules a client with job on loop.
func (c *Clients) Add(loop *sim.Loop, job Job) {
	if job.Requests < 1 {
		job.Requests = 1
	}
	cl := &client{pop: c, job: job, id: c.n}
	c.n++
	c.Stats.ClientCompletion = append(c.Stats.ClientCompletion, 0)
	loop.At(job.Start, cl)
}

// policies returns the policy state of client id's process, made on first use.
func (c *Clients) policies(id int) []Policy {
	if len(c.Retry.Policies) == 0 {
		return nil
	}
	p := id
	if c.Processes > 0 {
		p = id % c.Processes
	}
	for len(c.procs) <= p {
		c.procs = append(c.procs, nil)
	}
	if c.procs[p] == nil {
		ps := make([]Policy, len(c.Retry.Policies))
		for i, m := range c.Retry.Policies {
			ps[i] = m.New()
			if d, ok := ps[i].(Drawing); ok {
				d.UseRNG(c.RNG)
			}
		}
		c.procs[p] = ps
	}
	return c.procs[p]
}

// arrive counts an attempt reaching the server at t.
func (c *Clients) arrive(t time.Duration, retry bool) {
	bin := c.Bin
	if bin <= 0 {
		bin = 10 * time.Millisecond
	}
	c.Stats.Arrivals = Count(c.Stats.Arrivals, t, bin)
	if retry {
		c.Stats.Retries = Count(c.Stats.Retries, t, bin)
	}
}

// Count adds one to the bin of width bin holding t, growing bins as needed.
func Count(bins []int64, t, bin time.Duration) []int64 {
	i := int(t / bin)
	for len(bins) <= i {
		bins = append(bins, 0)
	}
	bins[i]++
	return bins
}

// end records client cl's job ending at now.
func (c *Clients) end(cl *client, now time.Duration) {
	c.Stats.Completion = max(c.Stats.Completion, now)
	c.Stats.ClientCompletion[cl.id] = now - cl.job.Start
}

// client is one client's state. Its own events are the start of its job and the end of
// each sleep, both a send; the attempts it sends are events of their own (flight).
type client struct {
	pop     *Clients
	job     Job
	id      int
	request int // index of the current request
	attempt int // tries of the current request so far
	prev    time.Duration
	// sent counts the attempts sent over the whole job; waiting is set while the client
	// waits for the reply to attempt number sent. A flight of an earlier number, or one
	// arriving when the client has stopped waiting, is answered to nobody.
	sent    int
	waiting bool
	// honoured is set when the coming try was timed by Retry-After.
	honoured bool
	// cause is the outcome that made the coming try a retry (zero for a first try).
	cause Outcome
}

// Fire implements sim.Handler: the job starts or a sleep ends, and the client tries to
// send.
func (c *client) Fire(l *sim.Loop) { c.try(l) }

// try asks the policies whether the next attempt may leave now, and sends it now, later
// (a pacing policy) or never (withheld: the request is given up).
func (c *client) try(l *sim.Loop) {
	if c.attempt == 0 {
		c.pop.Stats.Requests++
	}
	c.ask(l, 0, false)
}

// ask asks the policies from number from on; resumed is set when policy from made the
// attempt wait and that wait has ended.
func (c *client) ask(l *sim.Loop, from int, resumed bool) {
	p := c.pop
	pols := p.policies(c.id)
	for i := from; i < len(pols); i++ {
		var wait time.Duration
		ok := true
		pacer, paces := pols[i].(Pacer)
		if resumed && i == from && paces {
			wait = pacer.Resume(l.Now())
		} else {
			wait, ok = pols[i].Send(l.Now(), c.attempt == 0)
		}
		if !ok {
			p.Stats.Withheld++
			c.giveUp(l)
			return
		}
		if wait <= 0 {
			continue
		}
		if p.Retry.Deadline > 0 && l.Now()+wait >= c.job.Start+p.Retry.Deadline {
			if paces {
				pacer.Cancel()
			}
			c.giveUp(l)
			return
		}
		next := i
		if !paces {
			next = i + 1
		}
		l.After(wait, paced{c: c, from: next, resumed: paces})
		return
	}
	c.send(l)
}

// paced is the event of the end of a wait a policy imposed: the client asks on from
// policy number from.
type paced struct {
	c       *client
	from    int
	resumed bool
}

// Fire implements sim.Handler.
func (e paced) Fire(l *sim.Loop) { e.c.ask(l, e.from, e.resumed) }

// giveUp ends the client's job with its current request abandoned.
func (c *client) giveUp(l *sim.Loop) {
	c.pop.Stats.GiveUps++
	c.honoured = false
	c.pop.end(c, l.Now())
}

func (c *client) send(l *sim.Loop) {
	p := c.pop
	if c.cause == ClientError {
		p.Stats.RetriedWrongly++
	}
	c.attempt++
	c.sent++
	p.Stats.Calls++
	f := &flight{client: c, number: c.sent}
	f.attempt = Attempt{Client: c.id, Request: c.request, Number: c.attempt, NonIdempotent: c.job.NonIdempotent}
	if p.Retry.IdempotencyKeys {
		// Unique per (client, request); +1 keeps 0 meaning "no key".
		f.attempt.IdempotencyKey = (uint64(c.id)<<32 | uint64(c.request)) + 1
	}
	c.waiting = true
	l.After(p.Server.Forward(l.Now(), &f.attempt), f)
	if p.Retry.Timeout > 0 {
		f.giveUpAt = l.Now() + p.Retry.Timeout
		l.At(f.giveUpAt, timeout{f})
	}
}

// awaits reports whether the client still waits for the reply to flight f.
func (c *client) awaits(f *flight) bool { return c.waiting && c.sent == f.number }

// flight is one attempt on its way: its first event is the arrival at the server, its
// second the reply reaching the client.
type flight struct {
	client  *client
	attempt Attempt
	number  int // the client's count of attempts sent when this one left
	// giveUpAt is when the client stops waiting (0: never).
	giveUpAt time.Duration
	arrived  bool
	response response.Response
}

// Fire implements sim.Handler.
func (f *flight) Fire(l *sim.Loop) {
	c := f.client
	if f.arrived {
		if c.awaits(f) {
			c.receive(l, f.response, false)
		}
		return
	}
	f.arrived = true
	p := c.pop
	p.arrive(l.Now(), f.attempt.Number > 1)
	reply := p.Server.Serve(l.Now(), &f.attempt)
	back := l.Now() + reply.Latency
	if !c.awaits(f) || (f.giveUpAt > 0 && back >= f.giveUpAt) {
		// Carried out, but nobody reads the answer: the client has moved on or will
		// have by then (its timeout fires first).
		return
	}
	f.response = reply.Response
	l.At(back, f)
}

// timeout is the event of a client ceasing to wait for flight f. A single-pointer struct,
// so scheduling it does not allocate.
type timeout struct{ f *flight }

// Fire implements sim.Handler.
func (t timeout) Fire(l *sim.Loop) {
	if c := t.f.client; c.awaits(t.f) {
		c.pop.Stats.TimedOut++
		c.receive(l, response.Response{}, true)
	}
}

// Retryable reports whether a client retries a response with this status: 429 and every
// 5xx; any other 4xx is the client's own mistake and final.
func Retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// attemptLimit is the tightest of the client's own attempt limit and those its policies
// set (AttemptLimiter); 0 when none bounds the attempts.
func attemptLimit(own int, pols []Policy) int {
	limit := own
	for _, p := range pols {
		if a, ok := p.(AttemptLimiter); ok {
			if n := a.AttemptLimit(); n > 0 && (limit == 0 || n < limit) {
				limit = n
			}
		}
	}
	return limit
}

// receive handles the answer to the attempt the client waits for, or its timeout.
func (c *client) receive(l *sim.Loop, r response.Response, timedOut bool) {
	p := c.pop
	c.waiting = false
	o := Classify(r, timedOut)
	pols := p.policies(c.id)
	for _, pol := range pols {
		pol.Observe(l.Now(), o, c.cause)
	}
	if c.honoured {
		p.Stats.HonouredRetries++
		if !timedOut && r.Status == http.StatusTooManyRequests {
			p.Stats.HonouredRefused++
		}
		c.honoured = false
	}
	switch {
	case o == Succeeded:
		p.Stats.Succeeded++
		c.request++
		c.attempt, c.prev, c.cause = 0, 0, 0
		if c.request >= c.job.Requests {
			p.Stats.Done++
			p.end(c, l.Now())
			return
		}
		c.try(l)
		return
	case !o.Retryable() && !p.Retry.RetryAllErrors:
		p.Stats.Failed++
		p.end(c, l.Now())
		return
	}
	if limit := attemptLimit(p.Retry.MaxAttempts, pols); limit > 0 && c.attempt >= limit {
		c.giveUp(l)
		return
	}
	for _, pol := range pols {
		if !pol.Retry(l.Now(), o) {
			p.Stats.Withheld++
			c.giveUp(l)
			return
		}
	}
	sleep := p.Retry.Backoff.Delay(c.attempt, c.prev, p.RNG)
	c.prev = sleep
	if p.Retry.HonorRetryAfter && !timedOut && r.Header != nil {
		if ra, ok := response.Wait(r.Header, p.Epoch.Add(l.Now())); ok && ra >= sleep {
			sleep, c.honoured = ra, true
		}
	}
	if p.Retry.Deadline > 0 && l.Now()+sleep >= c.job.Start+p.Retry.Deadline {
		c.giveUp(l)
		return
	}
	c.cause = o
	l.After(sleep, c)
}
