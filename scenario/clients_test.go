package scenario

import (
	"path/filepath"
	"testing"
)

func TestBadClientsSectionsNameFileLineColumnAndField(t *testing.T) {
	tests := []struct{ file, want string }{
		{"strategy.yaml", `testdata/bad-clients/strategy.yaml:5:29: clients.strategies[1]: strategy "fibonacci": unknown backoff shape or policy "fibonacci" (shapes: none, constant, linear, exponential, full-jitter, equal-jitter, decorrelated-jitter, proportional-jitter; policies: retry-budget, retry-throttle, retry-quota, adaptive, circuit-breaker, sre-throttle, resilience4j-breaker)`},
		{"count.yaml", `testdata/bad-clients/count.yaml:4:10: clients.count: must be between 1 and 1000000, got 0`},
		{"hiccup.yaml", `testdata/bad-clients/hiccup.yaml:5:43: clients.hiccup.kind: want 503 or slow, got "flaky"`},
		{"field.yaml", `testdata/bad-clients/field.yaml:5:3: clients.jiter: unknown field (known: adaptive, base, bin, cap, circuit_breaker, count, deadline, error_mix, hiccup, idempotency_keys, jitter, key, max_attempts, non_idempotent, processes, requests, resilience4j_breaker, retry_after, retry_after_form, retry_after_precision, retry_all_errors, retry_budget, retry_quota, retry_throttle, runs, server, shed_retry_after, spread, sre_throttle, start, strategies, timeout)`},
		{"retry-after.yaml", `testdata/bad-clients/retry-after.yaml:5:16: clients.retry_after: want honor or ignore, got "sometimes"`},
		{"jitter.yaml", `testdata/bad-clients/jitter.yaml:5:11: clients.jitter: want a number, got a string "full"`},
		{"server.yaml", `testdata/bad-clients/server.yaml:5:11: clients.server: want rate-limited or overload, got "queue"`},
		{"budget.yaml", `testdata/bad-clients/budget.yaml:6:25: clients.retry_budget.ratio: must be between 0 and 100 (0%–10000%), got -0.1`},
		{"breaker.yaml", `testdata/bad-clients/breaker.yaml:5:48: clients.circuit_breaker.failure_ratio: must be above 0 and at most 1, got 1.5`},
		{"error-mix.yaml", `testdata/bad-clients/error-mix.yaml:5:14: clients.error_mix: 429 is the limiter's answer, not an error of the API`},
		{"overload-algorithms.yaml", `testdata/bad-clients/overload-algorithms.yaml:3:13: algorithms: a clients section with server: overload runs no limiter; leave algorithms out`},
		{"retry-all.yaml", `testdata/bad-clients/retry-all.yaml:5:21: clients.retry_all_errors: a client that retries a 400 retries it for ever; set max_attempts or deadline`},
		{"precision.yaml", `testdata/bad-clients/precision.yaml:5:26: clients.retry_after_precision: want s or ms, got "us"`},
		{"budget-ttl.yaml", `testdata/bad-clients/budget-ttl.yaml:6:35: clients.retry_budget.ttl: must be between 1s and 1m0s (Finagle's bounds), got 500ms`},
		{"sre.yaml", `testdata/bad-clients/sre.yaml:6:21: clients.sre_throttle.k: must be above 0 and at most 1000, got -2`},
		{"resilience4j.yaml", `testdata/bad-clients/resilience4j.yaml:6:50: clients.resilience4j_breaker.failure_rate_threshold: must be above 0% and at most 100%, got 150%`},
		{"quota-attempts.yaml", `testdata/bad-clients/quota-attempts.yaml:6:31: clients.retry_quota.max_attempts: must be between 0 (no bound) and 1000000, got -1`},
		{"policy-twice.yaml", `testdata/bad-clients/policy-twice.yaml:5:42: clients.strategies[1]: full-jitter+retry-budget is listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", "bad-clients", tt.file))
			if err == nil {
				t.Fatal("loaded without error")
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}
