package algorithms

import (
	"testing"
	"time"
)

// TestSpringGatewayTimeline: the reference's hand case (replenishRate=1, burstCapacity=2,
// requests at 10.1 … 13.5 s: A A R R A R A, all of one second alike), issue 368's 20
// admitted within 100 ms at replenishRate = burstCapacity = 10, requestedTokens, and the
// defaults' burstCapacity of 1.
func TestSpringGatewayTimeline(t *testing.T) {
	s := func(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)) }
	t.Run("hand case", func(t *testing.T) {
		runTimeline(t, mustNew(t, "spring-gateway:replenishRate=1 burstCapacity=2"), []step{
			{at: s(10.1), want: allowed(1, s(0.9))},
			{at: s(10.2), want: allowed(0, s(1.8))},
			{at: s(10.3), want: refused(0, s(0.7), s(1.7))},
			{at: s(10.9), want: refused(0, s(0.1), s(1.1))},
			{at: s(11.0), want: allowed(0, s(2))}, // the whole second brings one token
			{at: s(11.05), want: refused(0, s(0.95), s(1.95))},
			{at: s(13.5), want: allowed(1, s(0.5))},
			{at: s(12.5), want: allowed(0, s(2.5))}, // stamped back: decided at 13 s, no refill
		})
	})
	t.Run("issue 368", func(t *testing.T) {
		runTimeline(t, mustNew(t, "spring-gateway:replenishRate=10 burstCapacity=10"), []step{
			{at: s(10.9), n: 11, admit: 10, want: refused(0, s(0.1), s(0.1))},
			{at: s(11.0), n: 11, admit: 10, want: refused(0, time.Second, time.Second)}, // 20 within 100 ms
		})
	})
	t.Run("requestedTokens", func(t *testing.T) {
		// One request a minute: 60 tokens per request at 1 per second (Spring PR 1327).
		runTimeline(t, mustNew(t, "spring-gateway:replenishRate=1 burstCapacity=60 requestedTokens=60"), []step{
			{at: 0, want: allowed(0, time.Minute)},
			{at: 30 * time.Second, want: refused(0, 30*time.Second, 30*time.Second)},
			{at: time.Minute, want: allowed(0, time.Minute)},
			{at: time.Minute, key: 1, cost: 2, want: refused(1, Never, 0)},
		})
	})
	t.Run("burstCapacity left at 1", func(t *testing.T) {
		// ttl = ⌊2·1/10⌋ = 0: the script stores nothing and every request finds a full
		// bucket of one token.
		lim := mustNew(t, "spring-gateway:replenishRate=10")
		runTimeline(t, lim, []step{{at: 0, n: 100, admit: 100, want: allowed(1, 0)}})
		if lim.Keys() != 0 {
			t.Errorf("%d keys held by a script that stores nothing", lim.Keys())
		}
		if _, ok := BoundOf("spring-gateway:replenishRate=10", Policy{Limit: 1, Window: time.Second}, 0); ok {
			t.Error("a bound for a limiter that limits nothing")
		}
	})
	lim := mustNew(t, "spring-gateway:replenishRate=5 burstCapacity=10")
	lim.Allow(1, epoch, 1)
	if lim.Keys() != 2 || lim.StateBytes() != 32 {
		t.Errorf("%d keys, %d bytes; want 2 keys of 16 bytes", lim.Keys(), lim.StateBytes())
	}
}

// TestAWSAPIGatewayTimeline: the documented model's idealised cases — a full bucket of
// burst at once, then the rate — and a rate in thousandths.
func TestAWSAPIGatewayTimeline(t *testing.T) {
	runTimeline(t, mustNew(t, "aws-apigateway:rate=1000 burst=500"), []step{
		{at: 0, n: 1000, admit: 500},         // 1000 in one instant: the burst passes
		{at: 1 * ms, n: 2, admit: 1},         // then one per millisecond
		{at: 1*ms + 500_000, n: 1, admit: 0}, // half a millisecond later: none yet
	})
	runTimeline(t, mustNew(t, "aws-apigateway:rate=0.5 burst=1"), []step{
		{at: 0, want: allowed(0, 2*time.Second)},
		{at: time.Second, want: refused(0, time.Second, time.Second)},
		{at: 2 * time.Second, want: allowed(0, 2*time.Second)},
	})
	if lim := mustNew(t, "aws-apigateway"); lim.Allow(0, epoch, 5000).Remaining != 0 || lim.Allow(0, epoch, 1).Allowed {
		t.Error("the account's default burst is 5000")
	}
}
