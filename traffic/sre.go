package traffic

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// SREThrottleConfig is the client-side adaptive throttling of Google's "Site Reliability
// Engineering" book (chapter 21, "Handling Overload"): a client process counts, over the
// trailing Window, its requests — every attempt it tries to send, those it refuses
// itself included — and the accepts, the attempts the backend accepted; it then refuses
// an attempt itself, without sending it, with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// drawn from the run's RNG. While the backend accepts everything the probability is 0;
// as it refuses more, the client sheds locally what the backend would have refused,
// sending about K attempts per accept. K = 2 is the book's choice ("wastes" some backend
// work to learn quickly that it has recovered). First tries and retries are treated
// alike; an attempt refused locally ends its job (withheld), as the book's client returns
// the error to its caller.
//
// An accept is an answer of the backend other than a refusal or a failure of its own: a
// success, or a 4xx other than 429 (the backend did the work of refusing the request
// itself). A 429, a 503, any other 5xx and a timeout are not accepts. The window is kept
// as 10 slices, so a count leaves it up to a slice late.
type SREThrottleConfig struct {
	// K is the multiplier of accepts (the book: 2); above 0.
	K float64
	// Window is how far back requests and accepts are counted (the book: two minutes).
	Window time.Duration
}

// DefaultSREThrottle is the book's: K = 2 over the last two minutes.
var DefaultSREThrottle = SREThrottleConfig{K: 2, Window: 2 * time.Minute}

// Name returns "sre-throttle".
func (SREThrottleConfig) Name() string { return "sre-throttle" }

// New returns a process that has counted nothing.
func (c SREThrottleConfig) New() Policy {
	return &SREThrottle{k: c.K, requests: NewSliceCount(c.Window, sreSlices), accepts: NewSliceCount(c.Window, sreSlices)}
}

const sreSlices = 10

func (c SREThrottleConfig) validate() error {
	switch {
	case !(c.K > 0 && c.K <= 1000):
		return fmt.Errorf("sre-k: must be above 0 and at most 1000, got %g", c.K)
	case c.Window <= 0:
		return fmt.Errorf("sre-window: must be positive, got %s", c.Window)
	}
	return nil
}

// SREThrottle is one client process's adaptive throttle (SREThrottleConfig).
type SREThrottle struct {
	k                 float64
	requests, accepts SliceCount
	rng               *rand.Rand
}

var (
	_ Policy  = (*SREThrottle)(nil)
	_ Drawing = (*SREThrottle)(nil)
)

// UseRNG implements Drawing.
func (s *SREThrottle) UseRNG(r *rand.Rand) { s.rng = r }

// RejectProbability is the chance that an attempt at now is refused by the client:
// max(0, (requests − K·accepts) / (requests + 1)) over the window, before this attempt.
func (s *SREThrottle) RejectProbability(now time.Duration) float64 {
	req := float64(s.requests.Sum(now))
	return max(0, (req-float64(s.k*float64(s.accepts.Sum(now))))/(req+1))
}

// Send counts the attempt as a request and refuses it with RejectProbability.
func (s *SREThrottle) Send(now time.Duration, _ bool) (time.Duration, bool) {
	p := s.RejectProbability(now)
	s.requests.Add(now, 1)
	// No draw when nothing would be refused, so a healthy run draws exactly as one
	// without the throttle.
	if p <= 0 {
		return 0, true
	}
	return 0, s.rng.Float64() >= p
}

// Retry never holds a retry back: the throttle judges every attempt at Send.
func (s *SREThrottle) Retry(time.Duration, Outcome) bool { return true }

// Observe counts an accept.
func (s *SREThrottle) Observe(now time.Duration, o, _ Outcome) {
	if o == Succeeded || o == ClientError {
		s.accepts.Add(now, 1)
	}
}
