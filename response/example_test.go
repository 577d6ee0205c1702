package response_test

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
)

func ExampleFor() {
	p := response.Policy{Name: "per-user", Policy: algorithms.Policy{Limit: 100, Window: time.Minute}}
	lim := algorithms.NewFixedWindow(p.Policy)
	now := time.Date(2026, 1, 1, 10, 0, 48, 0, time.UTC).UnixNano()
	var d algorithms.Decision
	for range 101 {
		d = lim.Allow(0, now, 1)
	}
	r := response.For(d, p, response.Headers{})
	fmt.Println(r.Status, r.Header.Get("Retry-After"))
	fmt.Println(r.Header.Get("RateLimit-Policy"))
	fmt.Println(r.Header.Get("RateLimit"))
	// Output:
	// 429 12
	// "per-user";q=100;w=60
	// "per-user";r=0;t=12
}
