package worstcase_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/worstcase"
)

// The two-counter sliding window at 100 per minute: a client that fills the end of one
// window and then the end of the next gets almost 2L through inside one minute.
func ExampleSearch() {
	target := worstcase.Target{
		Algorithm: "sliding-window",
		Policy:    algorithms.Policy{Limit: 100, Window: time.Minute},
		Epoch:     time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano(),
	}
	r, err := worstcase.Search(target, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		panic(err)
	}
	fmt.Printf("bound %s = %.0f (reached: %v)\n", r.Bound.Formula, r.Bound.Value, r.Bound.Reached)
	fmt.Printf("found %d in one window (%.2f×) by %s: %s\n", r.Worst.Peak, r.OverAdmission(), r.FoundBy, r.Schedule)
	// Output:
	// bound L·(1+T/W) = 200 (reached: false)
	// found 199 in one window (1.99×) by window-ends: 100@59.999999999s 99@1m59.999999998s
}
