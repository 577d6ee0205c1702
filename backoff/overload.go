package backoff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// Overload is the model of a retry storm that feeds itself: clients in front of a backend
// of finite capacity with no limiter to protect it. The backend serves Capacity requests
// per second; it measures its load, the attempts that reached it in the trailing Window
// (kept as 10 slices), and when the load ρ (attempts over Capacity·Window) is above 1 it
// fails each arriving attempt with probability 1 − 1/ρ, answering 503 (with Retry-After
// when RetryAfter > 0). So its successes stay about Capacity per second whatever the
// load, and every retry of a failure adds load that makes more failures: at 1.5× capacity
// a third of first tries fail, and retries push the load — and the failures — higher.
//
// Every client has one job of Requests requests; the clients start evenly over Spread
// from Start, an open-loop offered load of clients/Spread per second that does not slow
// down when the backend does. Every hop takes |Normal(HopMean, HopStdDev)|.
type Overload struct {
	// Capacity is the backend's capacity in requests per second.
	Capacity float64
	// Window is the span over which the backend's load is measured.
	Window        time.Duration
	Requests      int
	Start, Spread time.Duration
	// RetryAfter is the Retry-After of the backend's 503s (0: none, a plain 503).
	RetryAfter time.Duration
	// RetryAfterMs adds Retry-After-Ms next to Retry-After.
	RetryAfterMs bool
	Retry        traffic.Retry // Backoff and Policies are set per run
	// Processes is the number of client processes the clients belong to (0: one per
	// client); the strategy's policies keep one state per process.
	Processes          int
	HopMean, HopStdDev time.Duration
	Epoch              time.Time
	Bin                time.Duration
}

// DefaultOverload is a backend of 1000 requests per second met by 15000 clients (set by
// the experiment) starting over 10 s: 1.5× its capacity.
var DefaultOverload = Overload{
	Capacity: 1000, Window: time.Second, Requests: 1, Spread: 10 * time.Second,
	HopMean: 10 * time.Millisecond, HopStdDev: 2 * time.Millisecond,
	Epoch: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC),
	Bin:   100 * time.Millisecond,
}

var _ Model = Overload{}

// Name returns "overload".
func (Overload) Name() string { return "overload" }

// String describes the setup.
func (m Overload) String() string {
	s := fmt.Sprintf("backend of %g requests/s (load over %s), clients starting over %s, %d request(s) per client", m.Capacity, m.Window, m.Spread, max(m.Requests, 1))
	if m.RetryAfter > 0 {
		s += fmt.Sprintf(", 503s with Retry-After %s", m.RetryAfter)
	}
	if m.RetryAfterMs {
		s += ", Retry-After-Ms"
	}
	return s + retryString(m.Retry, m.Processes)
}

// Validate reports a setup that cannot run.
func (m Overload) Validate() error {
	switch {
	case !(m.Capacity > 0 && m.Capacity <= 1e9):
		return fmt.Errorf("capacity must be between 0 and 1e9 requests per second, got %g", m.Capacity)
	case m.Window <= 0:
		return fmt.Errorf("load window must be positive, got %s", m.Window)
	case m.Start < 0 || m.Spread < 0:
		return fmt.Errorf("start and spread must not be negative")
	case m.RetryAfter < 0:
		return fmt.Errorf("retry-after must not be negative")
	case m.Processes < 0:
		return fmt.Errorf("processes must not be negative")
	}
	return nil
}

// Run implements Model.
func (m Overload) Run(strategy traffic.Strategy, clients int, seed uint64) RunStats {
	rng := sim.NewRNG(seed, sim.BackoffStream)
	b := &backend{m: m, rng: rng, load: traffic.NewSliceCount(m.Window, 10),
		perWindow: float64(m.Capacity * m.Window.Seconds())}
	pop := &traffic.Clients{Server: b, Retry: m.Retry, Epoch: m.Epoch, Bin: m.Bin, RNG: rng, Processes: m.Processes}
	return runClients(pop, strategy, clients, m.Start, m.Spread, traffic.Job{Requests: m.Requests})
}

// backend is the server side of an Overload run.
type backend struct {
	m         Overload
	rng       *rand.Rand
	load      traffic.SliceCount
	perWindow float64
}

func (b *backend) hop() time.Duration {
	// Rounded product: no FMA, the same delays on every platform (see occWorld.hop).
	return time.Duration(math.Abs(float64(b.m.HopMean) + float64(b.rng.NormFloat64()*float64(b.m.HopStdDev))))
}

// Forward implements traffic.Server: the hop to the backend.
func (b *backend) Forward(time.Duration, *traffic.Attempt) time.Duration { return b.hop() }

// Serve implements traffic.Server: the attempt adds to the load, and fails with
// probability 1 − 1/ρ when the load ρ is above capacity.
func (b *backend) Serve(now time.Duration, _ *traffic.Attempt) traffic.Reply {
	back := b.hop()
	b.load.Add(now, 1)
	rho := float64(b.load.Sum(now)) / b.perWindow
	if rho > 1 && b.rng.Float64() < 1-1/rho {
		r := response.Overloaded(b.m.RetryAfter)
		if b.m.RetryAfterMs {
			r.SetRetryAfterMs(b.m.RetryAfter)
		}
		return traffic.Reply{Response: r, Latency: back}
	}
	return traffic.Reply{Response: response.Response{Status: 200}, Latency: back}
}
