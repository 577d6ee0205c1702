package algorithms_test

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// The fixed-window boundary case of the design notes: 100 per minute, 100 requests at
// 10:00:59.900 and 100 more at 10:01:00.100.
func ExampleNew() {
	policy := algorithms.Policy{Limit: 100, Window: time.Minute}
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, name := range algorithms.Defaults() {
		lim, err := algorithms.New(name, policy)
		if err != nil {
			fmt.Println(err)
			return
		}
		admitted := 0
		var last algorithms.Decision
		for _, at := range []time.Duration{59900 * time.Millisecond, 60100 * time.Millisecond} {
			now := start.Add(at).UnixNano()
			for range 100 {
				last = lim.Allow(0, now, 1)
				if last.Allowed {
					admitted++
				}
			}
		}
		fmt.Printf("%-14s admitted %d of 200, last: retry after %v\n", name, admitted, last.RetryAfter)
	}
	// Output:
	// fixed-window   admitted 200 of 200, last: retry after 0s
	// sliding-log    admitted 100 of 200, last: retry after 59.8s
	// sliding-window admitted 100 of 200, last: retry after 500ms
	// token-bucket   admitted 100 of 200, last: retry after 399.999999ms
	// leaky-bucket   admitted 100 of 200, last: retry after 400ms
	// gcra           admitted 100 of 200, last: retry after 400ms
}

func ExampleNew_badPolicy() {
	_, err := algorithms.New("gcra", algorithms.Policy{Limit: 100})
	fmt.Println(err)
	_, err = algorithms.New("token_bucket", algorithms.Policy{Limit: 100, Window: time.Minute})
	fmt.Println(err)
	// Output:
	// window must be positive, got 0s
	// unknown algorithm "token_bucket" (want one of fixed-window, sliding-log, sliding-window, token-bucket, leaky-bucket, gcra, notes-sliding-window, notes-token-bucket, nginx:…, haproxy:…, envoy-local:…, envoy-ratelimit:…, kong:…, traefik:…, aws-apigateway:…, spring-gateway:…, express-rate-limit:…, rate-limiter-flexible:…)
}
