package store_test

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The notes' two-counter script on the in-process model: 100 per minute, the previous
// minute held 84; a quarter into this one the estimate is 84·0.75 = 63, so 36 more pass
// (99), then one (100), and the next is refused.
func ExampleLimiter() {
	st := store.NewModel()
	lim, _ := store.NewLimiter(st, "sliding-window", algorithms.Policy{Limit: 100, Window: time.Minute}, "rl:")
	minute := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	lim.Allow("user_8812", store.Now(minute), 84)
	quarter := minute + int64(time.Minute) + int64(15*time.Second)
	lim.Allow("user_8812", store.Now(quarter), 36)
	for range 2 {
		r, _ := lim.Allow("user_8812", store.Now(quarter), 1)
		fmt.Println(r.Allowed, r.Remaining)
	}
	keys, _ := st.Keys("rl:")
	for _, k := range keys {
		fmt.Println(k.Name, k.Value, k.TTL)
	}
	// Output:
	// true 0
	// false 0
	// rl:{user_8812}:sw:29454360 84 45s
	// rl:{user_8812}:sw:29454361 37 1m45s
}
