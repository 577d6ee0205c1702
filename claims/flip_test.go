package claims

import (
	"maps"
	"slices"
	"time"

	"github.com/rlsim/rlsim/report"
)

// flip is a measurement on a chosen side of its claim's thresholds and the verdict its
// rule must give there.
type flip struct {
	m    Measurement
	want Verdict
}

// flips gives, for every claim, measurements made from its real one but moved across its
// rule's thresholds, each with the verdict the rule must then give. Together they show
// that no verdict is constant: a change in the model that moves a figure across a
// threshold changes the verdict. TestEveryVerdictFollowsItsMeasurement checks every claim
// has an entry with at least two different verdicts.
var flips = map[string]func(Measurement) []flip{
	"fixed-window-200-in-200ms": boundaryFlips,
	"fixed-window-6000":         boundaryFlips,
	"fixed-window-twice-the-limit": func(x Measurement) []flip {
		m := x.(windowCeiling)
		reached, over, short := m, m, m
		reached.found, reached.scenarios = 2*m.limit, []namedPeak{{"a", 2 * m.limit}}
		over.found = 2*m.limit + 1
		short.found, short.scenarios = 2*m.limit-1, []namedPeak{{"a", m.limit}}
		return []flip{{reached, Holds}, {over, DoesNotHold}, {short, HoldsWithCaveat}}
	},
	"shorter-window": func(x Measurement) []flip {
		m := x.(shorterWindow)
		both, none, noHarm := m, m, m
		both.minuteOver, both.secondOver, both.brokenMinute, both.brokenSecond = 100, 2, 0, burstHarm
		none.secondOver = none.minuteOver
		noHarm.minuteOver, noHarm.secondOver, noHarm.brokenMinute, noHarm.brokenSecond = 100, 2, 0.1, 0.1+burstHarm/2
		return []flip{{both, Holds}, {none, DoesNotHold}, {noHarm, HoldsWithCaveat}}
	},
	"log-exact-fixed-cheap": func(x Measurement) []flip {
		m := x.(exactOrCheap)
		good, wrongLog, cheapLog := m, m, m
		good.logPeak, good.logWrong, good.fixedPeak, good.fixedBytes, good.logBytes = m.limit, 0, m.limit+1, 16, 16*costly
		wrongLog.logWrong = 0.001
		cheapLog.logBytes = cheapLog.fixedBytes * (costly - 1)
		return []flip{{good, Holds}, {wrongLog, DoesNotHold}, {cheapLog, DoesNotHold}}
	},
	"two-counter-estimate-95": func(x Measurement) []flip {
		m := x.(slidingEstimate)
		with := func(add ...int64) slidingEstimate {
			c := m
			c.admitted = maps.Clone(m.admitted)
			for i, a := range m.algorithmOrder {
				c.admitted[a] = m.expected() + add[i]
			}
			return c
		}
		return []flip{{with(0, 0), Holds}, {with(0, 1), HoldsWithCaveat}, {with(1, -1), DoesNotHold}}
	},
	"two-counter-uneven-traffic": func(x Measurement) []flip {
		m := x.(timedClient)
		at := func(v float64) timedClient {
			c := m
			c.window = int64(v * float64(m.limit))
			return c
		}
		return []flip{{at(1), Holds}, {at(1.2), HoldsWithCaveat}, {at(timedLarge), DoesNotHold}}
	},
	"two-counter-cloudflare-error": func(x Measurement) []flip {
		m := x.(errorRates)
		set := func(wrong func(int, errorRegime) int64) errorRates {
			c := errorRates{regimes: slices.Clone(m.regimes)}
			for i, r := range c.regimes {
				c.regimes[i].wrong = wrong(i, r)
			}
			return c
		}
		claimed := func(r errorRegime) int64 { return int64(claimTolerance * claimedErrorRate * float64(r.requests)) }
		return []flip{
			{set(func(_ int, r errorRegime) int64 { return claimed(r) }), Holds},
			{set(func(_ int, r errorRegime) int64 { return claimed(r) + 1 }), DoesNotHold},
			{set(func(i int, r errorRegime) int64 { return claimed(r) + int64(i%2) }), Depends},
		}
	},
	"sliding-log-entry-bytes": func(x Measurement) []flip {
		m := x.(entryBytes)
		at := func(in, high float64) entryBytes {
			c := m
			c.inProcess = in
			c.perEntry = []zsetEntry{{64, "listpack", entryLow}, {256, "skiplist", high}}
			return c
		}
		return []flip{{at(21, entryHigh), Holds}, {at(21, entryCaveat), HoldsWithCaveat}, {at(21, entryCaveat+1), DoesNotHold}, {at(entryLow-1, 50), DoesNotHold}}
	},
	"sliding-log-million-keys": func(x Measurement) []flip {
		m := x.(millionKeys)
		at := func(total float64) millionKeys {
			c := m
			c.total = int64(total)
			return c
		}
		return []flip{{at(severalLow), Holds}, {at(severalHigh), HoldsWithCaveat}, {at(1e9 - 1), DoesNotHold}}
	},
	"sliding-log-vs-two-counters": func(x Measurement) []flip {
		m := x.(logVsCounters)
		at := func(ratio float64) logVsCounters {
			c := m
			c.redis100 = ratio
			return c
		}
		return []flip{{at(1000), Holds}, {at(150), HoldsWithCaveat}, {at(99), DoesNotHold}}
	},
	"token-bucket-lazy-refill": func(x Measurement) []flip {
		m := x.(lazyState)
		at := func(b float64) lazyState { return lazyState{rlsim: m.rlsim, notes: b} }
		return []flip{{at(twoNumbers), Holds}, {at(2 * twoNumbers), HoldsWithCaveat}, {at(2*twoNumbers + 8), DoesNotHold}}
	},
	"token-bucket-burst-20": func(x Measurement) []flip {
		m := x.(tokenBurst)
		exact, short, over, slow := m, m, m, m
		exact.burstAdmitted, exact.floodAdmitted = m.burst, int64(m.rate*m.flood.Seconds())
		short.burstAdmitted = m.burst - 1
		over.burstAdmitted, over.floodAdmitted = m.burst, int64(float64(m.burst)+m.rate*m.flood.Seconds())+1
		slow.burstAdmitted, slow.floodAdmitted = m.burst, int64(0.9*m.rate*m.flood.Seconds())
		return []flip{{exact, Holds}, {short, DoesNotHold}, {over, DoesNotHold}, {slow, DoesNotHold}}
	},
	"token-bucket-b-plus-rt": func(x Measurement) []flip {
		m := x.(bucketBound)
		set := func(delta ...int64) bucketBound {
			c := bucketBound{spans: slices.Clone(m.spans)}
			for i := range c.spans {
				c.spans[i].found = int64(c.spans[i].bound) + delta[min(i, len(delta)-1)]
			}
			return c
		}
		return []flip{{set(0), Holds}, {set(-1), HoldsWithCaveat}, {set(0, 1), DoesNotHold}}
	},
	"notes-consume-retry-after": func(x Measurement) []flip {
		m := x.(consumeRetry)
		good, fails, neverSaid, broken, late := m, m, m, m, m
		good.fitsStatus, good.tooBigStatus = 200, 200
		fails.fitsStatus, fails.tooBigStatus, fails.tooBigRetry = 200, 429, m.spacing
		neverSaid.fitsStatus, neverSaid.tooBigStatus, neverSaid.tooBigRetry = 200, 413, ""
		broken.fitsStatus = 429
		late.fitsRetry = "2"
		return []flip{{good, Holds}, {fails, Depends}, {neverSaid, Holds}, {broken, DoesNotHold}, {late, NotCheckable}}
	},
	"page-load-strict-window": func(x Measurement) []flip {
		m := x.(pageLoads)
		at := func(strict, bucket float64) pageLoads {
			c := m
			c.strict, c.bucket, c.strictPeak, c.bucketPeak = strict, bucket, m.limit, m.limit
			return c
		}
		return []flip{{at(brokenMany, brokenFew), Holds}, {at(brokenMany, brokenFew*2), HoldsWithCaveat}, {at(brokenFew, brokenFew), DoesNotHold}}
	},
	"cost-weighting": func(x Measurement) []flip {
		m := x.(costWeighting)
		held, paid, loose := m, m, m
		held.hogSent, held.weighted, held.counted, held.legitRefused = 100, 25, 50, legitShare
		paid.hogSent, paid.weighted, paid.counted, paid.legitRefused = 100, 25, 50, 2*legitShare
		loose.hogSent, loose.weighted = 100, 26
		return []flip{{held, Holds}, {paid, HoldsWithCaveat}, {loose, DoesNotHold}}
	},
	"read-decide-write-race": func(x Measurement) []flip {
		m := x.(race)
		slack := int64(raceSlack*float64(m.limit)) + 1
		// A racy fixed window against an atomic one at two settings, beside a token bucket
		// whose atomic figure (b + r·T, above the limit by design) must not count as a race.
		with := func(racy, atomic1, atomic2 int64) race {
			return race{scenario: "cluster-racy", limit: m.limit,
				racy: []fleetPoint{{"racy", "fixed-window", 10, time.Millisecond, racy}},
				atomic: []fleetPoint{{"atomic", "fixed-window", 1, time.Millisecond, atomic1}, {"atomic", "fixed-window", 10, 50 * time.Millisecond, atomic2},
					{"atomic", "token-bucket", 10, time.Millisecond, 2 * m.limit}}}
		}
		return []flip{{race{limit: m.limit, atomic: m.atomic}, NotCheckable},
			{with(m.limit+slack, m.limit, m.limit), Holds},
			{with(m.limit+2*slack, m.limit, m.limit+slack), HoldsWithCaveat},
			{with(m.limit+slack-1, m.limit, m.limit), DoesNotHold}}
	},
	"incr-expire-crash": func(x Measurement) []flip {
		m := x.(incrExpire)
		none, design, both, never := m, m, m, m
		none.crashes = 0
		design.crashes, design.ttlBlocked, design.shutOut, design.stampedBlocked = 5, 3, 2, 0
		both.crashes, both.ttlBlocked, both.shutOut, both.stampedBlocked = 5, 3, 2, 1
		never.crashes, never.ttlBlocked = 5, 0
		return []flip{{none, NotCheckable}, {design, Depends}, {both, Holds}, {never, DoesNotHold}}
	},
	"lua-script-atomic": func(x Measurement) []flip {
		m := x.(atomicFleet)
		at := func(counter, bucket int64) atomicFleet {
			c := m
			c.rows = []fleetRowFigures{{"fixed-window", counter, 1}, {"token-bucket", bucket, 1}}
			return c
		}
		return []flip{{at(m.limit, m.burst+m.limit), Holds}, {at(m.limit+1, m.limit), DoesNotHold}, {at(m.limit, m.burst+m.limit+1), DoesNotHold}}
	},
	"notes-two-counter-script": func(x Measurement) []flip {
		m := x.(notesScript)
		at := func(peak, hog int64) notesScript {
			c := m
			c.notesPeak, c.notesHog = m.rlsimPeak+peak, m.rlsimHog+hog
			return c
		}
		return []flip{{at(unitSlack, 0), Holds}, {at(0, 1), Depends}, {at(unitSlack+1, 0), Depends}, {at(unitSlack+1, 1), DoesNotHold}}
	},
	"notes-script-cluster-slots": func(x Measurement) []flip {
		m := x.(clusterSlots)
		at := func(untagged, tagged int) clusterSlots {
			c := m
			c.untagged, c.tagged = untagged, tagged
			return c
		}
		return []flip{{at(0, m.calls), Holds}, {at(m.calls, m.calls), DoesNotHold}, {at(m.calls/10, m.calls), HoldsWithCaveat}, {at(0, m.calls-1), HoldsWithCaveat}}
	},
	"local-limits-routing": func(x Measurement) []flip {
		m := x.(localRouting)
		at := func(even, hashed int64) localRouting {
			c := m
			c.even, c.hashed = even, hashed
			return c
		}
		perNode := m.limit / int64(m.nodes)
		return []flip{{at(m.limit, perNode), Holds}, {at(m.limit/2, perNode), HoldsWithCaveat}, {at(m.limit, m.limit), DoesNotHold}}
	},
	"local-limits-scale-out": func(x Measurement) []flip {
		m := x.(scaleOut)
		at := func(static, recomputed int64) scaleOut {
			c := m
			c.static, c.recomputed = static, recomputed
			return c
		}
		all := m.limit * int64(m.to)
		return []flip{{at(all, m.limit), Holds}, {at(2*m.limit, m.limit), HoldsWithCaveat}, {at(m.limit, m.limit), DoesNotHold}, {at(all, m.limit+1), HoldsWithCaveat}}
	},
	"two-tier-limits": func(x Measurement) []flip {
		m := x.(twoTier)
		at := func(tierTrips, sharedEff, tierEff int64) twoTier {
			c := m
			c.rows = []tierPair{{"sliding-window", float64(tierTrips) / 10, 1, tierEff, sharedEff}}
			return c
		}
		return []flip{{at(3, m.limit, m.limit), Holds}, {at(3, m.limit+30, m.limit+20), HoldsWithCaveat}, {at(6, m.limit, m.limit), DoesNotHold}, {at(3, m.limit, m.limit+10), DoesNotHold}}
	},
	"token-leasing": func(x Measurement) []flip {
		m := x.(leasing)
		at := func(rows ...leaseRow) leasing { return leasing{limit: m.limit, burst: m.burst, leases: rows} }
		good := leaseRow{"lease-10", 10, leaseTrips, int64(float64(m.limit) * (1 + leaseSlack))}
		starved := leaseRow{"lease-50", 50, 0.04, int64(leaseStarved*float64(m.limit)) - 1}
		costly := leaseRow{"lease-1", 1, leaseTrips + 0.01, m.limit}
		return []flip{{at(good), Holds}, {at(good, starved), HoldsWithCaveat}, {at(costly, starved), DoesNotHold}}
	},
	"store-outage-policy": func(x Measurement) []flip {
		m := x.(outage)
		with := func(change func(rows map[string]outageRow)) outage {
			c := m
			c.rows = maps.Clone(m.rows)
			change(c.rows)
			return c
		}
		inside := with(func(r map[string]outageRow) {
			l := r["fail-open-local"]
			l.effective = m.limit
			r["fail-open-local"] = l
		})
		outside := with(func(r map[string]outageRow) {
			l := r["fail-open-local"]
			l.effective = m.limit + 1
			r["fail-open-local"] = l
		})
		leaky := with(func(r map[string]outageRow) { c := r["fail-closed"]; c.admitted = 1; r["fail-closed"] = c })
		silent := with(func(r map[string]outageRow) { l := r["fail-open-local"]; l.alerts = 0; r["fail-open-local"] = l })
		return []flip{{inside, Holds}, {outside, HoldsWithCaveat}, {leaky, DoesNotHold}, {silent, DoesNotHold}}
	},
	"nat-crowd-ip-key": func(x Measurement) []flip {
		m := x.(natCrowd)
		at := func(ip, user float64) natCrowd {
			c := m
			c.byIP.legitRefused, c.byUser.legitRefused = ip, user
			return c
		}
		return []flip{{at(crowdHarm, legitShare), Holds}, {at(crowdHarm/2, 0), HoldsWithCaveat}, {at(0, 0), DoesNotHold}}
	},
	"ipv4-rotation": rotationFlips,
	"ipv6-prefix":   rotationFlips,
	"x-forwarded-for-trust": func(x Measurement) []flip {
		m := x.(xffTrust)
		good, lenient, trusting, wrongCount := m, m, m, m
		good.leftmost.attackerPassed, good.right = walkThrough, keyRun{key: "xff:2", attackerPassed: stopShare, legitRefused: legitShare}
		good.tooFew, good.tooMany = keyRun{legitRefused: crowdHarm}, keyRun{attackerPassed: walkThrough}
		lenient = good
		lenient.tooMany = keyRun{}
		trusting = good
		trusting.leftmost.attackerPassed = walkThrough / 2
		wrongCount = good
		wrongCount.right.legitRefused = 2 * legitShare
		return []flip{{good, Holds}, {lenient, HoldsWithCaveat}, {trusting, DoesNotHold}, {wrongCount, DoesNotHold}}
	},
	"tenant-quotas": func(x Measurement) []flip {
		m := x.(tenantQuotas)
		at := func(with, without float64) tenantQuotas {
			c := m
			c.with.legitRefused, c.without.legitRefused = with, without
			return c
		}
		return []flip{{at(legitShare, tenantHarm), Holds}, {at(0.05, tenantHarm), HoldsWithCaveat}, {at(tenantHarm, tenantHarm), DoesNotHold}}
	},
	"login-ip-and-account": func(x Measurement) []flip {
		m := x.(loginLayers)
		set := func(c campaigns, actor string, admitted int64) campaigns {
			out := maps.Clone(c)
			out[actor] = [2]int64{admitted, 100}
			return out
		}
		base := m
		base.legitRefused = 0
		base.both = set(set(set(m.both, stuffing, 20), bruteForce, 20), spreadStuffing, 89)
		base.ipOnly = set(m.ipOnly, bruteForce, 90)
		base.accountOnly = set(m.accountOnly, stuffing, 90)
		spread := base
		spread.both = set(base.both, spreadStuffing, 90)
		ipEnough := base
		ipEnough.ipOnly = set(base.ipOnly, bruteForce, 89)
		leaky := base
		leaky.both = set(base.both, stuffing, 21)
		return []flip{{base, Holds}, {spread, HoldsWithCaveat}, {ipEnough, DoesNotHold}, {leaky, DoesNotHold}}
	},
	"layered-refusal-named": func(x Measurement) []flip {
		m := x.(namedRefusals)
		lost, anonymous := m, m
		lost.rejected++
		anonymous.policyInBody = "default"
		return []flip{{lost, DoesNotHold}, {anonymous, DoesNotHold}, {fixNamed(m), Holds}}
	},
	"status-429": func(Measurement) []flip {
		return []flip{{refusalStatus{429}, Holds}, {refusalStatus{503}, DoesNotHold}, {refusalStatus{403}, DoesNotHold}}
	},
	"retry-after": func(x Measurement) []flip {
		m := x.(retryAfter)
		at := func(seconds string, share float64) retryAfter {
			c := m
			c.seconds, c.date, c.refusedAgain = seconds, "Thu, 01 Jan 2026 10:01:01 GMT", &share
			return c
		}
		return []flip{{at("13", retryTruth), Holds}, {at("13", retryTruth*2), DoesNotHold}, {at("0", 0), DoesNotHold}, {at("soon", 0), DoesNotHold}}
	},
	"ratelimit-fields": func(x Measurement) []flip {
		m := x.(rateLimitFields)
		good := rateLimitFields{limit: 100, headers: map[string]string{"RateLimit": `"d";r=0;t=5`, "RateLimit-Policy": `"d";q=100;w=60`, "Retry-After": "5",
			"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "5", "X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "5"}}
		stale := rateLimitFields{limit: 100, headers: maps.Clone(good.headers)}
		stale.headers["X-RateLimit-Reset"] = "60"
		draftless := rateLimitFields{limit: m.limit, headers: maps.Clone(good.headers)}
		delete(draftless.headers, "RateLimit")
		later := rateLimitFields{limit: 100, headers: maps.Clone(good.headers)}
		later.headers["RateLimit"], later.headers["RateLimit-Reset"], later.headers["X-RateLimit-Reset"] = `"d";r=0;t=72`, "72", "72"
		early := rateLimitFields{limit: 100, headers: maps.Clone(good.headers)}
		early.headers["Retry-After"] = "6"
		return []flip{{good, Holds}, {later, Holds}, {stale, DoesNotHold}, {draftless, DoesNotHold}, {early, DoesNotHold}}
	},
	"no-store": func(Measurement) []flip {
		return []flip{{noStore{"no-store"}, Holds}, {noStore{"private, no-store"}, Holds}, {noStore{"max-age=60"}, DoesNotHold}, {noStore{""}, DoesNotHold}}
	},
	"synchronized-retry-waves": func(x Measurement) []flip {
		m := x.(waves)
		at := func(fixed, jittered float64) waves {
			c := m
			c.peaks = map[string]float64{}
			for _, s := range m.fixed {
				c.peaks[s] = fixed
			}
			for _, s := range m.jittered {
				c.peaks[s] = jittered
			}
			return c
		}
		return []flip{{at(waveRatio*20, 20), Holds}, {at(2*20, 20), HoldsWithCaveat}, {at(20, 20), DoesNotHold}}
	},
	"full-jitter-vs-exponential":  duelFlips,
	"full-jitter-vs-equal-jitter": duelFlips,
	"honour-retry-after": func(x Measurement) []flip {
		m := x.(honour)
		at := func(ratio float64) honour {
			c := honour{honoured: maps.Clone(m.honoured), ignored: maps.Clone(m.ignored)}
			for _, n := range honourStrategies {
				h, i := c.honoured[n], c.ignored[n]
				h.CallsMean, i.CallsMean = 1000, 1000*ratio
				c.honoured[n], c.ignored[n] = h, i
			}
			return c
		}
		return []flip{{at(honourGain), Holds}, {at(1.2), HoldsWithCaveat}, {at(0.9), DoesNotHold}}
	},
	"attempt-caps-deadlines": func(x Measurement) []flip {
		m := x.(caps)
		over, late := m, m
		over.capped.CallsMean = float64(m.capped.Clients*m.maxAttempts) + 1
		late.late.CompletionMSMean = float64((m.deadline + deadlineSlack + time.Millisecond) / time.Millisecond)
		good := m
		good.capped.CallsMean, good.capped.GiveUps, good.uncapped.CallsMean = float64(m.capped.Clients), 1, float64(m.capped.Clients*m.maxAttempts+1)
		good.late.CompletionMSMean, good.late.CallsMean = float64(m.deadline/time.Millisecond), 1
		return []flip{{good, Holds}, {over, DoesNotHold}, {late, DoesNotHold}}
	},
	"no-retry-other-4xx": func(x Measurement) []flip {
		m := x.(finalStatuses)
		final, loose, eager := m, m, m
		final.neverStatus = 413
		loose.neverStatus = 429
		eager.neverStatus, eager.retried = 413, append(slices.Clone(m.retried), 404)
		return []flip{{final, Holds}, {loose, HoldsWithCaveat}, {eager, DoesNotHold}}
	},
	"idempotency-keys": func(x Measurement) []flip {
		m := x.(idempotency)
		good, twice := m, m
		good.without.Duplicates, good.with.Duplicates = 1, 0
		twice.without.Duplicates, twice.with.Duplicates = 1, 1
		return []flip{{good, Holds}, {twice, DoesNotHold}}
	},
	"two-counter-cheap-fix": func(x Measurement) []flip {
		m := x.(cheapFix)
		at := func(extraBytes, extraRedis float64, timed float64) cheapFix {
			c := m
			c.fixedPeak, c.windowPeak = 2*m.limit, m.limit
			c.windowBytes, c.windowRedis = m.fixedBytes+extraBytes, m.fixedRedis+extraRedis
			c.timedPeak = int64(timed * float64(m.limit))
			return c
		}
		return []flip{{at(cheapInProcess, cheapRedis, 1), Holds}, {at(cheapInProcess, cheapRedis, timedLarge), Depends}, {at(cheapInProcess+1, 0, 1), DoesNotHold}, {at(0, cheapRedis+1, 1), DoesNotHold}}
	},
	"retry-after-calms-clients": func(x Measurement) []flip {
		m := x.(calming)
		at := func(again, crowd float64) calming {
			c := m
			c.refusedAgain, c.crowdPeak, c.jitterPeak = &again, crowd, 20
			return c
		}
		return []flip{{at(0, 20), Holds}, {at(retryTruth, waveRatio*20), Depends}, {at(2*retryTruth, 20), DoesNotHold}}
	},
	"gubernator-single-owner": func(x Measurement) []flip {
		m := x.(ownerExact)
		at := func(effective int64, hops float64) ownerExact {
			c := m
			c.rows = []ownerRow{{variant: "a", effective: effective, hops: hops}}
			return c
		}
		edge := int64(float64(m.limit) * (1 + ownerSlack))
		return []flip{{at(edge, 0.9), Holds}, {at(edge+1, 0.9), DoesNotHold}, {at(m.limit, 1.5), DoesNotHold}}
	},
	"gubernator-batching": func(x Measurement) []flip {
		m := x.(batching)
		at := func(batched float64) batching {
			c := m
			c.direct, c.batched = 1, batched
			return c
		}
		return []flip{{at(1 - batchingCut), Holds}, {at(0.99), HoldsWithCaveat}, {at(1), DoesNotHold}}
	},
	"gubernator-cache-loss": func(x Measurement) []flip {
		m := x.(cacheLoss)
		at := func(moved int64, over float64, window time.Duration) cacheLoss {
			c := m
			c.keys, c.moved, c.overAdmission, c.window = 100, moved, over, window
			return c
		}
		return []flip{{at(50, 2, shortPeriod), Holds}, {at(50, 2, shortPeriod+1), HoldsWithCaveat}, {at(51, 2, shortPeriod), DoesNotHold}, {at(10, 1, shortPeriod), DoesNotHold}}
	},
	"gubernator-global": func(x Measurement) []flip {
		m := x.(gubernatorGlobal)
		at := func(zeroEffective int64, hops float64, effective int64) gubernatorGlobal {
			c := m
			c.points = []syncPoint{{effective: zeroEffective, hops: 0.9}, {sync: time.Second, effective: effective, hops: hops}}
			return c
		}
		over := int64(float64(m.limit)*(1+syncSlack)) + 1
		return []flip{{at(m.limit, 0, over), Holds}, {at(m.limit, 0.9, over), DoesNotHold}, {at(m.limit, 0, over-1), DoesNotHold}, {at(over, 0, over), DoesNotHold}}
	},
	"nginx-burst-plus-one": func(x Measurement) []flip {
		m := x.(nginxBurstPlusOne)
		textbook, fewer := m, m
		textbook.nginxAtOnce, fewer.nginxAtOnce = m.burst, m.burst-5
		return []flip{{m, Holds}, {textbook, DoesNotHold}, {fewer, DoesNotHold}}
	},
	"haproxy-counts-refused": func(x Measurement) []flip {
		m := x.(haproxyRefusedCount)
		level, over := m, m
		level.haproxy = int64(heldBelow*float64(m.slidingWindow)) + 1
		over.haproxyPeak = m.limit + 1
		return []flip{{m, Holds}, {level, DoesNotHold}, {over, DoesNotHold}}
	},
	"kong-calendar-windows": func(x Measurement) []flip {
		m := x.(kongCalendar)
		opened, leaky := m, m
		opened.kong = m.limit
		leaky.express = m.limit + 1
		return []flip{{m, Holds}, {opened, DoesNotHold}, {leaky, DoesNotHold}}
	},
	"kong-sync-rate": func(x Measurement) []flip {
		m := x.(kongSync)
		over := int64(float64(m.limit)*(1+syncSlack)) + 1
		at := func(efs ...int64) kongSync {
			c := m
			c.points = nil
			for i, e := range efs {
				c.points = append(c.points, syncPoint{sync: time.Duration(i) * time.Second, effective: e})
			}
			return c
		}
		return []flip{{at(m.limit, over, over), Holds}, {at(m.limit, over-1, over), HoldsWithCaveat}, {at(over, over, over), DoesNotHold}, {at(m.limit, m.limit, m.limit), DoesNotHold}}
	},
	"redis-async-replication": func(x Measurement) []flip {
		m := x.(asyncReplication)
		at := func(lostAt0, lostLate, freeLate int64) asyncReplication {
			c := m
			c.points = []lagPoint{{lost: lostAt0}, {lag: time.Second, lost: lostLate, freePasses: freeLate}}
			return c
		}
		return []flip{{at(0, 1, 1), Holds}, {at(1, 1, 1), DoesNotHold}, {at(0, 0, 0), DoesNotHold}, {at(0, 1, 0), DoesNotHold}}
	},
	"redis-eviction": func(x Measurement) []flip {
		m := x.(evictionFree)
		at := func(smallFree, largeFree, oom int64) evictionFree {
			c := m
			c.points = []memPoint{{policy: "allkeys-lru", maxmemory: 1, freePass: smallFree}, {policy: "allkeys-lru", maxmemory: 2, freePass: largeFree}, {policy: "noeviction", oom: oom}}
			return c
		}
		return []flip{{at(1, 0, 1), Holds}, {at(1, 1, 1), HoldsWithCaveat}, {at(0, 0, 1), DoesNotHold}, {at(1, 0, 0), DoesNotHold}}
	},
}

func boundaryFlips(x Measurement) []flip {
	m := x.(boundaryBurst)
	exact, half, slow := m, m, m
	exact.admitted, exact.peak, exact.first, exact.last = 2*m.limit, 2*m.limit, 0, boundarySpan
	half.admitted, half.peak = m.limit, m.limit
	slow.admitted, slow.peak, slow.first, slow.last = 2*m.limit, 2*m.limit, 0, boundarySpan+1
	return []flip{{exact, Holds}, {half, DoesNotHold}, {slow, DoesNotHold}}
}

func rotationFlips(x Measurement) []flip {
	m := x.(rotation)
	good := m
	good.varied.attackerPassed, good.held.attackerPassed, good.held.legitRefused, good.tooShort = walkThrough, stopShare, legitShare, nil
	crowded := good
	crowded.tooShort = &keyRun{key: "ipv6/56", legitRefused: crowdHarm}
	stopped := good
	stopped.varied.attackerPassed = walkThrough / 2
	harmful := good
	harmful.held.legitRefused = 2 * legitShare
	return []flip{{good, Holds}, {crowded, HoldsWithCaveat}, {stopped, DoesNotHold}, {harmful, DoesNotHold}}
}

func duelFlips(x Measurement) []flip {
	m := x.(duel)
	win := [2]report.RetryResult{{CallsMean: 1, CompletionMSMean: 1}, {CallsMean: 2, CompletionMSMean: 2}}
	lose := [2]report.RetryResult{{CallsMean: 2, CompletionMSMean: 1}, {CallsMean: 1, CompletionMSMean: 2}}
	at := func(occ, storm [2]report.RetryResult) duel { return duel{a: m.a, b: m.b, occ: occ, storm: storm} }
	return []flip{{at(win, win), Holds}, {at(win, lose), Depends}, {at(lose, win), Depends}, {at(lose, lose), DoesNotHold}}
}

// fixNamed is m with every refusal accounted for and the policy named in both places.
func fixNamed(m namedRefusals) namedRefusals {
	var sum int64
	for _, l := range m.layers {
		sum += l.Refused
	}
	m.rejected, m.policyInBody, m.policyInHeader = sum, m.named, `"`+m.named+`";q=5;w=300`
	return m
}
