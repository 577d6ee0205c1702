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
// (both network hops and the server's time).
type Reply struct {
	Response response.Response
	Latency  time.Duration
}

// Server answers attempts in the simulation. Serve runs when an attempt is sent, at now;
// the server is a model, so it may decide at once and let Latency carry the delay.
type Server interface {
	Serve(now time.Duration, a *Attempt) Reply
}

// ClientStats is what a population of clients measured.
type ClientStats struct {
	// Calls counts attempts sent.
	Calls int64
	// Arrivals counts attempts per bin of Clients.Bin, from t=0: the herd.
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
}

// Clients is a population of closed-loop clients on one event loop. Each client has one
// job and at most one event pending; nothing runs outside the loop.
type Clients struct {
	Server Server
	Retry  Retry
	// Epoch is the wall-clock time of t=0, for reading Retry-After as an HTTP-date.
	Epoch time.Time
	// Bin is the width of the Arrivals bins (default 10 ms).
	Bin time.Duration
	// RNG draws the jittered sleeps; the run's one random source.
	RNG   *rand.Rand
	Stats ClientStats

	n int
}

// Add schedules a client with job on loop.
func (c *Clients) Add(loop *sim.Loop, job Job) {
	if job.Requests < 1 {
		job.Requests = 1
	}
	cl := &client{pop: c, job: job, id: c.n}
	c.n++
	loop.At(job.Start, cl)
}

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

func (c *Clients) end(now time.Duration) { c.Stats.Completion = max(c.Stats.Completion, now) }

// client is one client's state; the same value handles its send and reply events, which
// alternate.
type client struct {
	pop     *Clients
	job     Job
	id      int
	request int // index of the current request
	attempt int // tries of the current request so far
	prev    time.Duration
	// awaiting is set while a reply (or a timeout) is pending.
	awaiting bool
	reply    Reply
	timedOut bool
	// honoured is set when the coming try was timed by Retry-After.
	honoured bool
}

// Fire implements sim.Handler: a send when nothing is pending, else the reply (or the
// timeout) arriving.
func (c *client) Fire(l *sim.Loop) {
	if !c.awaiting {
		c.send(l)
		return
	}
	c.awaiting = false
	c.receive(l)
}

func (c *client) send(l *sim.Loop) {
	p := c.pop
	c.attempt++
	p.Stats.Calls++
	p.arrive(l.Now(), c.attempt > 1)
	a := Attempt{Client: c.id, Request: c.request, Number: c.attempt, NonIdempotent: c.job.NonIdempotent}
	if p.Retry.IdempotencyKeys {
		// Unique per (client, request); +1 keeps 0 meaning "no key".
		a.IdempotencyKey = (uint64(c.id)<<32 | uint64(c.request)) + 1
	}
	c.reply = p.Server.Serve(l.Now(), &a)
	c.awaiting = true
	c.timedOut = p.Retry.Timeout > 0 && c.reply.Latency > p.Retry.Timeout
	if c.timedOut {
		l.After(p.Retry.Timeout, c)
		return
	}
	l.After(c.reply.Latency, c)
}

// Retryable reports whether a client retries a response with this status: 429 and every
// 5xx; any other 4xx is the client's own mistake and final.
func Retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

func (c *client) receive(l *sim.Loop) {
	p := c.pop
	status := c.reply.Response.Status
	if c.timedOut {
		p.Stats.TimedOut++
		status = 0
	}
	if c.honoured {
		p.Stats.HonouredRetries++
		if status == http.StatusTooManyRequests {
			p.Stats.HonouredRefused++
		}
		c.honoured = false
	}
	switch {
	case status >= 200 && status < 300:
		c.request++
		c.attempt, c.prev = 0, 0
		if c.request >= c.job.Requests {
			p.Stats.Done++
			p.end(l.Now())
			return
		}
		c.send(l)
		return
	case status != 0 && !Retryable(status):
		p.Stats.Failed++
		p.end(l.Now())
		return
	}
	if p.Retry.MaxAttempts > 0 && c.attempt >= p.Retry.MaxAttempts {
		p.Stats.GiveUps++
		p.end(l.Now())
		return
	}
	sleep := p.Retry.Backoff.Delay(c.attempt, c.prev, p.RNG)
	c.prev = sleep
	if p.Retry.HonorRetryAfter && !c.timedOut {
		if v := c.reply.Response.Header.Get("Retry-After"); v != "" {
			if ra, ok := response.ParseRetryAfter(v, p.Epoch.Add(l.Now())); ok && ra >= sleep {
				sleep, c.honoured = ra, true
			}
		}
	}
	if p.Retry.Deadline > 0 && l.Now()+sleep >= c.job.Start+p.Retry.Deadline {
		p.Stats.GiveUps++
		c.honoured = false
		p.end(l.Now())
		return
	}
	l.After(sleep, c)
}
