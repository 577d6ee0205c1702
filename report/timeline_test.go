package report

import (
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

func TestTimelineBinStaysBounded(t *testing.T) {
	tests := []struct {
		horizon time.Duration
		want    time.Duration
	}{
		{2 * time.Minute, 200 * time.Millisecond},
		{10 * time.Minute, time.Second},
		{time.Second, time.Millisecond * 2},
		{0, time.Millisecond},
		{800 * 24 * time.Hour, 24 * time.Hour},
		{5000 * 24 * time.Hour, 8 * 24 * time.Hour},
	}
	for _, tt := range tests {
		got := TimelineBin(tt.horizon)
		if got != tt.want {
			t.Errorf("TimelineBin(%s) = %s, want %s", tt.horizon, got, tt.want)
		}
		if n := int64(tt.horizon) / int64(got); n >= MaxTimelineBins {
			t.Errorf("TimelineBin(%s) gives %d bins", tt.horizon, n)
		}
	}
}

// The boundary case as a fixed window decides it: 100 admitted at 59.9 s and 100 at
// 60.1 s. The busiest key's trailing window must read 200 from 60.1 s until the first
// hundred leave at 119.9 s.
func TestTimelineShowsTheBoundarySpike(t *testing.T) {
	pol := algorithms.Policy{Limit: 100, Window: time.Minute}
	c := NewCollector(pol.Limit, pol.Window, time.Second)
	c.RecordTimeline(2 * time.Minute)
	for _, at := range []time.Duration{59900 * time.Millisecond, 60100 * time.Millisecond} {
		for range 100 {
			c.Observe(0, int64(at), 1, traffic.Legit, algorithms.Decision{Allowed: true})
		}
	}
	// A refused request for another key late in the run.
	c.Observe(1, int64(90*time.Second), 1, traffic.Legit, algorithms.Decision{})
	lim, err := algorithms.New("fixed-window", pol)
	if err != nil {
		t.Fatal(err)
	}
	tl := c.Result(lim).Timeline
	if tl == nil {
		t.Fatal("no timeline")
	}
	if tl.Bin != 200*time.Millisecond || len(tl.Admitted) != 600 {
		t.Fatalf("bin %s, %d bins; want 200ms and 600", tl.Bin, len(tl.Admitted))
	}
	at := func(d time.Duration) int { return int(d / tl.Bin) }
	checks := []struct {
		name string
		got  int64
		want int64
	}{
		{"admitted in the 59.8 s bin", tl.Admitted[at(59800*time.Millisecond)], 100},
		{"admitted in the 60.0 s bin", tl.Admitted[at(60*time.Second)], 100},
		{"refused in the 90 s bin", tl.Refused[at(90*time.Second)], 1},
		{"window at 30 s", tl.WindowAdmitted[at(30*time.Second)], 0},
		{"window in the 59.8 s bin", tl.WindowAdmitted[at(59800*time.Millisecond)], 100},
		{"window in the 60.0 s bin", tl.WindowAdmitted[at(60*time.Second)], 200},
		{"window at 90 s (quiet, still 200)", tl.WindowAdmitted[at(90*time.Second)], 200},
		{"window at 119.8 s", tl.WindowAdmitted[at(119800*time.Millisecond)], 200},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %d, want %d", ch.name, ch.got, ch.want)
		}
	}
	var sum int64
	for _, v := range tl.Admitted {
		sum += v
	}
	if sum != 200 {
		t.Errorf("admitted over all bins = %d, want 200", sum)
	}
}

func TestNoTimelineUnlessAsked(t *testing.T) {
	c := NewCollector(10, time.Second, time.Second)
	c.Observe(0, 0, 1, traffic.Legit, algorithms.Decision{Allowed: true})
	lim, _ := algorithms.New("sliding-log", algorithms.Policy{Limit: 10, Window: time.Second})
	if c.Result(lim).Timeline != nil {
		t.Fatal("timeline recorded without RecordTimeline")
	}
}
