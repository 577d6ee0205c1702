package response_test

import (
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/traffic"
)

// TestSimulatedClientsDoNotRetryWhatCanNeverPass checks the status the simulated clients
// act on: they retry a 429 but treat the answer to a request that can never fit as final.
func TestSimulatedClientsDoNotRetryWhatCanNeverPass(t *testing.T) {
	p := response.Policy{Name: "p", Policy: algorithms.Policy{Limit: 3, Window: time.Second}}
	lim := algorithms.NewSlidingLog(p.Policy)
	never := response.For(lim.Allow(0, 0, 4), p, response.Headers{})
	if traffic.Retryable(never.Status) {
		t.Errorf("status %d for a cost beyond the limit is retried", never.Status)
	}
	for range 3 {
		lim.Allow(0, 0, 1)
	}
	if spent := response.For(lim.Allow(0, 0, 1), p, response.Headers{}); !traffic.Retryable(spent.Status) {
		t.Errorf("status %d for a spent key is not retried", spent.Status)
	}
}
