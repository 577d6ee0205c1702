package sim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestSameInstantRunsInSchedulingOrder(t *testing.T) {
	var l Loop
	var got []string
	mark := func(s string) Handler { return HandlerFunc(func(*Loop) { got = append(got, s) }) }
	l.At(2*time.Second, mark("c"))
	l.At(time.Second, mark("a"))
	l.At(time.Second, mark("b"))
	l.At(2*time.Second, HandlerFunc(func(l *Loop) {
		got = append(got, "d")
		l.At(0, mark("e")) // in the past: runs now, after what is already due
	}))
	l.At(2*time.Second, mark("f"))
	l.Run(time.Hour)
	want := []string{"a", "b", "c", "d", "f", "e"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	if l.Now() != 2*time.Second {
		t.Fatalf("Now = %v, want 2s", l.Now())
	}
}

func TestRunStopsAtHorizon(t *testing.T) {
	var l Loop
	n := 0
	var tick Handler
	tick = HandlerFunc(func(l *Loop) { n++; l.After(time.Second, tick) })
	l.At(0, tick)
	l.Run(10 * time.Second)
	if n != 11 {
		t.Fatalf("ticks = %d, want 11 (0s..10s)", n)
	}
	if l.Pending() != 1 || l.Now() != 10*time.Second {
		t.Fatalf("pending %d now %v", l.Pending(), l.Now())
	}
}

func ExampleLoop() {
	var l Loop
	for _, d := range []time.Duration{300 * time.Millisecond, 100 * time.Millisecond} {
		l.At(d, HandlerFunc(func(l *Loop) { fmt.Println("event at", l.Now()) }))
	}
	l.Run(time.Second)
	// Output:
	// event at 100ms
	// event at 300ms
}

// RunContext stops between two events once its context is done, within cancelCheck
// events, with the context's cause, and leaves the rest queued; a context that never
// ends runs everything, as Run does.
func TestRunContextStops(t *testing.T) {
	stop := errors.New("stopped by the test")
	ctx, cancel := context.WithCancelCause(context.Background())
	var l Loop
	fired := 0
	var tick HandlerFunc
	tick = func(l *Loop) {
		fired++
		if fired == 10_000 {
			cancel(stop)
		}
		l.After(time.Millisecond, tick)
	}
	l.At(0, tick)
	if err := l.RunContext(ctx, time.Hour); !errors.Is(err, stop) {
		t.Fatalf("RunContext = %v, want the context's cause", err)
	}
	if fired < 10_000 || fired > 10_000+cancelCheck || l.Pending() != 1 {
		t.Fatalf("fired %d events after the cancel at 10000 (at most %d more), %d pending", fired, cancelCheck, l.Pending())
	}

	var whole Loop
	n := 0
	for i := range 10_000 {
		whole.At(time.Duration(i), HandlerFunc(func(*Loop) { n++ }))
	}
	if err := whole.RunContext(context.Background(), time.Hour); err != nil || n != 10_000 {
		t.Fatalf("RunContext on a live context: %v after %d of 10000 events", err, n)
	}
}
