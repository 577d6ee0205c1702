// Package pool runs n indexed jobs on a bounded number of goroutines: the one worker pool
// of the project (sweeps, retry experiments, a run's algorithms). Each job writes its
// result at its own index, so the outcome is the same bytes whatever the scheduling.
package pool

import (
	"runtime"

	"golang.org/x/sync/errgroup"
)

// Each calls job(i) for every i in [0, n), on at most workers goroutines at once
// (workers ≤ 0 means GOMAXPROCS). Every job runs even when another fails, and Each
// returns the error of the lowest index that failed, so that the error reported does not
// depend on timing. With one worker the jobs run in index order on the caller's goroutine
// and Each stops at the first error.
func Each(n, workers int, job func(i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers == 1 || n <= 1 {
		for i := range n {
			if err := job(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error {
			errs[i] = job(i)
			return nil
		})
	}
	g.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
