package worstcase

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// firstRequestWindow is a limiter rlsim does not ship, as a user brings one: a counter per
// key that opens at the key's first request and expires a window later (INCR + EXPIRE),
// counting refused requests too.
type firstRequestWindow struct {
	p             algorithms.Policy
	opened, count int64
	seen, closed  bool
}

type firstRequestMaker struct{ built []*firstRequestWindow }

func (m *firstRequestMaker) New(p algorithms.Policy) (algorithms.Limiter, error) {
	l := &firstRequestWindow{p: p}
	m.built = append(m.built, l)
	return l, nil
}

func (l *firstRequestWindow) Name() string      { return "incr_expire" }
func (l *firstRequestWindow) Keys() int         { return 1 }
func (l *firstRequestWindow) StateBytes() int64 { return 0 }
func (l *firstRequestWindow) Close() error      { l.closed = true; return nil }

func (l *firstRequestWindow) Allow(_ uint32, now, _ int64) algorithms.Decision {
	if !l.seen || now >= l.opened+int64(l.p.Window) {
		l.seen, l.opened, l.count = true, now, 0
	}
	l.count++
	return algorithms.Decision{Allowed: l.count <= l.p.Limit} // no RetryAfter: the search must cope
}

// TestSearchOwnLimiter: the search judges a limiter it does not know by name, with no
// analytic bound, ends although the limiter gives no RetryAfter, closes every limiter it
// built, and finds the window opened by a first request: 2L−1 in one window.
func TestSearchOwnLimiter(t *testing.T) {
	m := &firstRequestMaker{}
	p := algorithms.Policy{Limit: 10, Window: 10 * time.Second}
	res, err := Search(Target{Algorithm: "incr_expire", Own: m, Policy: p, Epoch: 1767261600 * int64(time.Second)}, 20, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Known {
		t.Error("a bound is claimed for a limiter rlsim does not ship")
	}
	if res.Worst.Peak != 2*p.Limit-1 {
		t.Errorf("worst peak %d, want %d (a first request, then a burst at each end of its window)", res.Worst.Peak, 2*p.Limit-1)
	}
	for i, l := range m.built {
		if !l.closed {
			t.Fatalf("limiter %d of %d was not closed", i+1, len(m.built))
		}
	}
}

// cancellingMaker ends the search's context when it builds its after-th limiter.
type cancellingMaker struct {
	firstRequestMaker
	after  int
	cancel context.CancelCauseFunc
}

func (m *cancellingMaker) New(p algorithms.Policy) (algorithms.Limiter, error) {
	if len(m.built)+1 == m.after {
		m.cancel(errStopped)
	}
	return m.firstRequestMaker.New(p)
}

var errStopped = errors.New("stopped by the user")

// A search whose context ends runs no further candidate and returns the context's cause:
// the limiter being run when it ended is the last one built.
func TestSearchContextStopsBetweenRuns(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	m := &cancellingMaker{after: 3, cancel: cancel}
	p := algorithms.Policy{Limit: 10, Window: 10 * time.Second}
	_, err := FindContext(ctx, Target{Algorithm: "incr_expire", Own: m, Policy: p}, 50, []time.Duration{p.Window, 2 * p.Window}, rand.New(rand.NewPCG(1, 2)))
	if !errors.Is(err, errStopped) {
		t.Fatalf("error %v, want the context's cause", err)
	}
	if len(m.built) != 3 {
		t.Errorf("%d limiters built, want 3: none after the context ended", len(m.built))
	}
	// Not ended: the same search runs to the end.
	m2 := &firstRequestMaker{}
	if _, err := FindContext(context.Background(), Target{Algorithm: "incr_expire", Own: m2, Policy: p}, 50, []time.Duration{p.Window}, rand.New(rand.NewPCG(1, 2))); err != nil || len(m2.built) < 10 {
		t.Fatalf("%v, %d limiters built", err, len(m2.built))
	}
}
