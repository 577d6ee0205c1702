package algorithms

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestNotesVariantsAreBuiltByNameButNotListed(t *testing.T) {
	p := Policy{Limit: 10, Window: time.Second}
	for _, name := range Variants() {
		lim, err := New(name, p)
		if err != nil || lim.Name() != name || !Known(name) {
			t.Errorf("New(%q) = %v, %v; Known %v", name, lim, err, Known(name))
		}
		if slices.Contains(Defaults(), name) {
			t.Errorf("%s is in the default list", name)
		}
	}
	if Known("notes-gcra") || !Known("gcra") {
		t.Error("Known does not follow Defaults() and Variants()")
	}
}

func TestNotesSlidingWindowTimeline(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		// The notes' worked example decides as rlsim's window does: whole estimates.
		{"100 per minute", Policy{Limit: 100, Window: time.Minute}, []step{
			{at: 10 * s, n: 100, admit: 100},
			// 20% into the next window: 100·0.8 = 80, and 80 … 99 are below 100.
			{at: 72 * s, n: 21, admit: 20},
			// 25% in: 100·0.75 + 20 = 95 < 100, so exactly 5 more pass.
			{at: 75 * s, n: 10, admit: 5},
		}},
		// A fraction: prev 3 at half its weight is 1.5. The notes admit while the estimate is
		// below 3 — at 1.5 and at 2.5 — and leave it at 3.5; rlsim's window admits one.
		{"fractional estimate", Policy{Limit: 3, Window: 3 * s}, []step{
			{at: 0, n: 3, admit: 3},
			{at: 4500 * ms, n: 3, admit: 2},
			// 3·(1 − e/3 s) + 2 < 3 once e passes 2 s: at 5 s the estimate is still 3.
			{at: 4500 * ms, want: refused(0, 500*ms+1, 4500*ms)},
			{at: 5 * s, want: refused(0, 1, 4*s)},
			{at: 5*s + 1, want: allowed(0, 4*s-1)},
		}},
		// The script counts every request as 1, whatever it costs.
		{"cost ignored", Policy{Limit: 3, Window: 3 * s}, []step{
			{at: 0, cost: 50, n: 3, admit: 3},
			// Full until prev starts to decay, 1 ns into the next window.
			{at: 0, cost: 50, want: refused(0, 3*s+1, 6*s)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTimeline(t, NewNotesSlidingWindow(tt.policy), tt.steps)
		})
	}
	rlsim := NewSlidingWindow(Policy{Limit: 3, Window: 3 * s})
	runTimeline(t, rlsim, []step{{at: 0, n: 3, admit: 3}, {at: 4500 * ms, n: 3, admit: 1}})
}

// A refused request retried after its RetryAfter passes, and one nanosecond earlier it
// does not, on random ordered traces: the retry time follows the script's own rule.
func TestNotesSlidingWindowRetryAfter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range propertyPolicies {
		lim := NewNotesSlidingWindow(p)
		for i, a := range randomTrace(rng, p, 3, 1500) {
			d := lim.Allow(a.key, a.now, a.cost)
			if d.Allowed || d.Remaining < 0 || d.Reset < 0 {
				if d.Remaining < 0 || d.Reset < 0 {
					t.Fatalf("%s arrival %d: %+v", p, i, d)
				}
				continue
			}
			after := cloneNotes(lim).Allow(a.key, a.now+int64(d.RetryAfter), a.cost)
			before := cloneNotes(lim).Allow(a.key, a.now+int64(d.RetryAfter)-1, a.cost)
			if !after.Allowed || before.Allowed {
				t.Fatalf("%s arrival %d: retry after %v admitted %v, 1ns earlier %v", p, i, d.RetryAfter, after.Allowed, before.Allowed)
			}
		}
	}
}

// A step back into an earlier window counts in the newest one at its start: it neither
// resets the counters nor goes uncounted.
func TestNotesSlidingWindowBackwards(t *testing.T) {
	lim := NewNotesSlidingWindow(Policy{Limit: 2, Window: time.Second})
	runTimeline(t, lim, []step{
		{at: 1500 * ms, n: 2, admit: 2},
		// Decided at 1 s with prev 0 and curr 2: full until 2 s + 1 ns, empty at 3 s.
		{at: 900 * ms, want: refused(0, 1100*ms+1, 2100*ms)},
	})
}

func TestNotesTokenBucketTimeline(t *testing.T) {
	const s = time.Second
	p := Policy{Limit: 10, Window: s, Burst: 20}
	runTimeline(t, NewNotesTokenBucket(p), []step{
		// Full at the start: 20 pass, the 21st is short of 1 token, 0.1 s away, which
		// consume rounds up to a whole second.
		{at: 0, n: 21, admit: 20, want: refused(0, s, 2*s)},
		{at: 100 * ms, want: allowed(0, 2*s)},
		// A cost above the capacity is told to come back in whole seconds, and when it
		// does the bucket is full and still short: refused again, with the same answer.
		{at: 10 * s, cost: 30, want: refused(20, s, 0)},
		{at: 11 * s, cost: 30, want: refused(20, s, 0)},
		{at: 1000 * s, cost: 30, want: refused(20, s, 0)},
		{at: 1000 * s, cost: 20, want: allowed(0, 2*s)},
	})
}

// consume and x/time/rate's arithmetic admit the same requests on ordered traces whose
// costs fit the bucket, up to float rounding at exact boundaries; the notes' RetryAfter is
// rlsim's rounded up to a whole second.
func TestNotesTokenBucketAgreesWithTokenBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, p := range propertyPolicies {
		notes, ours := NewNotesTokenBucket(p), NewTokenBucket(p)
		differ, n := 0, 0
		for _, a := range randomTrace(rng, p, 3, 1500) {
			if a.cost > p.EffectiveBurst() {
				continue
			}
			n++
			dn, do := notes.Allow(a.key, a.now, a.cost), ours.Allow(a.key, a.now, a.cost)
			if dn.Allowed != do.Allowed {
				differ++
				continue
			}
			if !dn.Allowed && dn.RetryAfter != time.Duration((int64(do.RetryAfter)+int64(time.Second)-1)/int64(time.Second))*time.Second {
				t.Errorf("%s: notes retry after %v, rlsim %v", p, dn.RetryAfter, do.RetryAfter)
			}
		}
		if differ > n/1000 {
			t.Errorf("%s: %d of %d decisions differ", p, differ, n)
		}
	}
}

func cloneNotes(l *NotesSlidingWindow) *NotesSlidingWindow {
	c := *l
	c.state = slices.Clone(l.state)
	return &c
}
