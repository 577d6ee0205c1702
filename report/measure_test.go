package report

import (
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

// fakeLimiter admits what its script says, so the collector's arithmetic is tested alone.
type fakeLimiter struct{}

func (fakeLimiter) Name() string                                   { return "fake" }
func (fakeLimiter) Allow(uint32, int64, int64) algorithms.Decision { return algorithms.Decision{} }
func (fakeLimiter) Keys() int                                      { return 2 }
func (fakeLimiter) StateBytes() int64                              { return 48 }

const sec = int64(time.Second)

func TestCollectorJudgesAgainstItsOwnHistory(t *testing.T) {
	// Limit 3 per 10 s for one key.
	c := NewCollector(3, 10*time.Second, time.Second)
	steps := []struct {
		t       int64
		cost    int64
		allowed bool
		wantRef bool
	}{
		{0, 1, true, true},
		{1 * sec, 2, true, true},    // window now holds 3
		{2 * sec, 1, true, false},   // a false allow: 4 in (−8 s, 2 s]
		{3 * sec, 1, false, false},  // rightly refused: the window holds 4
		{10 * sec, 1, false, false}, // (0, 10 s] still holds 2+1 = 3: rightly refused
		{11 * sec, 1, false, true},  // (1 s, 11 s] holds 1: a false reject
		{11 * sec, 1, true, true},
	}
	for i, s := range steps {
		got := c.Observe(0, s.t, s.cost, traffic.Legit, algorithms.Decision{Allowed: s.allowed})
		if got != s.wantRef {
			t.Fatalf("step %d: reference allowed %v, want %v", i, got, s.wantRef)
		}
	}
	r := c.Result(fakeLimiter{})
	if r.FalseAllow != 1 || r.FalseReject != 1 {
		t.Errorf("false allow %d reject %d, want 1 and 1", r.FalseAllow, r.FalseReject)
	}
	if r.PeakWindowAdmitted != 4 || r.OverAdmission != 4.0/3 {
		t.Errorf("peak %d over %v, want 4 and 1.33", r.PeakWindowAdmitted, r.OverAdmission)
	}
	if r.Requests != 7 || r.Admitted != 4 || r.Rejected != 3 {
		t.Errorf("requests %d admitted %d rejected %d", r.Requests, r.Admitted, r.Rejected)
	}
	if r.StateBytesPerKey != 24 {
		t.Errorf("state bytes per key %v, want 48/2", r.StateBytesPerKey)
	}
	if *r.LegitRejectRate != 3.0/7 || r.AttackerAdmitRate != nil {
		t.Errorf("legit reject %v attacker admit %v", *r.LegitRejectRate, r.AttackerAdmitRate)
	}
}

func TestCollectorKeepsKeysApart(t *testing.T) {
	c := NewCollector(1, time.Minute, time.Second)
	for key := uint32(0); key < 3; key++ {
		if !c.Observe(key, 0, 1, traffic.Attacker, algorithms.Decision{Allowed: true}) {
			t.Fatalf("key %d: the first request of a key is always within the promise", key)
		}
	}
	r := c.Result(fakeLimiter{})
	if r.PeakWindowAdmitted != 1 || r.FalseAllow != 0 || *r.AttackerAdmitRate != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestBackendSeesQueuedRequestsWhenReleased(t *testing.T) {
	c := NewCollector(100, time.Minute, time.Second)
	// Four requests arrive together; a queue releases them 0, 1, 2 and 3 s later.
	for i := int64(0); i < 4; i++ {
		c.Observe(0, 0, 1, traffic.Legit, algorithms.Decision{Allowed: true, Delay: time.Duration(i * sec)})
	}
	r := c.Result(fakeLimiter{})
	if r.BackendPeak != 1 {
		t.Errorf("backend_peak %d, want 1: the queue spaces the requests a second apart", r.BackendPeak)
	}
	if r.DelayMeanMS != 1500 || r.DelayMaxMS != 3000 {
		t.Errorf("delay mean %v max %v, want 1500 and 3000", r.DelayMeanMS, r.DelayMaxMS)
	}
	if r.PeakWindowAdmitted != 4 {
		t.Errorf("peak %d: admission counts at arrival", r.PeakWindowAdmitted)
	}
}

// uncountedLimiter keeps its state where rlsim cannot count it, as a user's script does.
type uncountedLimiter struct{ fakeLimiter }

func (uncountedLimiter) StateBytes() int64 { return -1 }
