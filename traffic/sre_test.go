package traffic

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// draws is a rand.Source whose Float64s are its values in turn (Float64 keeps the low
// 53 bits of Uint64, over 2^53).
type draws struct {
	vals []float64
	n    int
}

func (d *draws) Uint64() uint64 {
	v := d.vals[d.n%len(d.vals)]
	d.n++
	return uint64(v * (1 << 53))
}

// The probability max(0, (requests − K·accepts)/(requests + 1)) by hand, K = 2: one
// accept among 1, 2, 3, 4, 5 requests gives 0, 0, 1/4, 2/5, 1/2; a refused attempt counts
// as a request; the window forgets both counts.
func TestSREThrottleHandCase(t *testing.T) {
	src := &draws{vals: []float64{0.5}}
	s := SREThrottleConfig{K: 2, Window: 10 * time.Second}.New().(*SREThrottle)
	s.UseRNG(rand.New(src))
	if w, ok := s.Send(0, true); w != 0 || !ok || src.n != 0 {
		t.Fatal("nothing counted yet: the attempt goes, and no number is drawn")
	}
	s.Observe(10*ms, Succeeded, 0)
	for i, want := range []float64{0, 0, 0.25, 0.4} { // before requests 2 to 5
		if p := s.RejectProbability(time.Second); math.Abs(p-want) > 1e-12 {
			t.Fatalf("before request %d: p = %g, want %g", i+2, p, want)
		}
		// The draw is 0.5: at or above p, the attempt goes.
		if _, ok := s.Send(time.Second, false); !ok {
			t.Fatalf("request %d: refused with p = %g and a draw of 0.5", i+2, want)
		}
		s.Observe(time.Second, ServerError, ServerError)
	}
	if p := s.RejectProbability(time.Second); p != 0.5 {
		t.Fatalf("5 requests, 1 accept: p = %g, want 1/2", p)
	}
	src.vals = []float64{0.4999}
	if _, ok := s.Send(time.Second, false); ok {
		t.Fatal("a draw below p = 1/2 must refuse the attempt")
	}
	// 6 requests now, the refused one among them: (6 − 2)/7.
	if p := s.RejectProbability(time.Second); math.Abs(p-4.0/7) > 1e-12 {
		t.Fatalf("after a refusal: p = %g, want 4/7", p)
	}
	// Accepts pull it down: 3 accepts over 6 requests is 0.
	s.Observe(time.Second, Succeeded, 0)
	s.Observe(time.Second, ClientError, 0) // the backend did the work: an accept
	s.Observe(time.Second, Throttled, 0)   // a 429 is not
	if p := s.RejectProbability(time.Second); p != 0 {
		t.Fatalf("6 requests, 3 accepts: p = %g, want 0", p)
	}
	// 10 s later the window (10 slices of 1 s) has forgotten everything.
	if p := s.RejectProbability(11 * time.Second); p != 0 || s.requests.Sum(11*time.Second) != 0 {
		t.Fatalf("after the window: p = %g, %d requests", p, s.requests.Sum(11*time.Second))
	}
	if s.Retry(0, ServerError) != true {
		t.Fatal("the throttle judges at Send, never at Retry")
	}
}

// K scales what the backend may refuse before the client sheds: with K = 1 one accept
// over 3 requests gives (3 − 1)/4.
func TestSREThrottleK(t *testing.T) {
	for _, c := range []struct {
		k    float64
		want float64
	}{{1, 0.5}, {2, 0.25}, {3, 0}} {
		s := SREThrottleConfig{K: c.k, Window: time.Minute}.New().(*SREThrottle)
		s.UseRNG(rand.New(&draws{vals: []float64{0.99}}))
		for range 3 {
			s.Send(0, true)
		}
		s.Observe(0, Succeeded, 0)
		if p := s.RejectProbability(0); p != c.want {
			t.Errorf("K = %g: p = %g, want %g", c.k, p, c.want)
		}
	}
	for _, bad := range []SREThrottleConfig{{K: 0, Window: time.Second}, {K: 2, Window: 0}} {
		if err := bad.validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
