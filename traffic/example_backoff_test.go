package traffic_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func ExampleNewBackoff() {
	expo, _ := traffic.NewBackoff("exponential", 5*time.Millisecond, 2*time.Second)
	full, _ := traffic.NewBackoff("full-jitter", 5*time.Millisecond, 2*time.Second)
	rng := rand.New(rand.NewPCG(1, 2))
	for attempt := 1; attempt <= 4; attempt++ {
		d := full.Delay(attempt, 0, rng)
		fmt.Println(attempt, expo.Delay(attempt, 0, nil), d < expo.Delay(attempt, 0, nil))
	}
	// Output:
	// 1 10ms true
	// 2 20ms true
	// 3 40ms true
	// 4 80ms true
}
