package pool

import (
	"fmt"
	"sync/atomic"
	"testing"
)

func TestEachRunsEveryIndexOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 7} {
		for _, n := range []int{0, 1, 5, 100} {
			hits := make([]int32, n)
			if err := Each(n, workers, func(i int) error { atomic.AddInt32(&hits[i], 1); return nil }); err != nil {
				t.Fatal(err)
			}
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("workers %d, n %d: job %d ran %d times", workers, n, i, h)
				}
			}
		}
	}
}

// The error reported is the lowest failing index's, whatever the timing; with several
// workers every job still runs.
func TestEachReportsTheFirstIndexThatFailed(t *testing.T) {
	for _, workers := range []int{1, 3, 8} {
		var ran atomic.Int32
		err := Each(50, workers, func(i int) error {
			ran.Add(1)
			if i%10 == 7 {
				return fmt.Errorf("job %d", i)
			}
			return nil
		})
		if err == nil || err.Error() != "job 7" {
			t.Fatalf("workers %d: err = %v, want job 7", workers, err)
		}
		if want := int32(50); workers > 1 && ran.Load() != want {
			t.Fatalf("workers %d: %d jobs ran, want %d", workers, ran.Load(), want)
		}
		if workers == 1 && ran.Load() != 8 {
			t.Fatalf("one worker: %d jobs ran, want 8 (stops at the first error)", ran.Load())
		}
	}
}

func TestEachBoundsConcurrency(t *testing.T) {
	var now, most atomic.Int32
	block := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- Each(20, 3, func(int) error {
			n := now.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			<-block
			now.Add(-1)
			return nil
		})
	}()
	for range 20 {
		block <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if most.Load() > 3 || most.Load() < 1 {
		t.Fatalf("%d jobs at once, want at most 3", most.Load())
	}
}
