package algorithms

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// productSpec is a product's model as the contract tests run it: the spec, the policy its
// traffic is drawn around (the rate it promises), and the most a fully recovered key
// admits at one instant.
type productSpec struct {
	spec     string
	traffic  Policy
	capacity int64
	// notLeast marks a model whose waits are enough but may be a nanosecond more than
	// the least (x/time/rate's forgiveness of a sub-nanosecond deficit).
	notLeast bool
	// fullerReset marks a model whose Reset is when every counter is empty, which can be
	// after the capacity passes (Kong: a short period's capacity fits a long period's
	// remainder).
	fullerReset bool
}

var productSpecs = []productSpec{
	{spec: "envoy-local:max_tokens=5 tokens_per_fill=2 fill_interval=1s version=1.30", traffic: Policy{Limit: 2, Window: time.Second, Burst: 5}, capacity: 5},
	{spec: "envoy-local:max_tokens=20 tokens_per_fill=10 fill_interval=1s", traffic: Policy{Limit: 10, Window: time.Second, Burst: 20}, capacity: 20},
	{spec: "envoy-local:max_tokens=3 fill_interval=300ms version=1.33.1", traffic: Policy{Limit: 1, Window: 300 * ms, Burst: 3}, capacity: 3},
	{spec: "envoy-ratelimit:unit=second requests_per_unit=4", traffic: Policy{Limit: 4, Window: time.Second}, capacity: 4},
	{spec: "envoy-ratelimit:unit=minute requests_per_unit=30 local_cache", traffic: Policy{Limit: 30, Window: time.Minute}, capacity: 30},
	{spec: "kong:second=3 minute=20", traffic: Policy{Limit: 20, Window: time.Minute}, capacity: 3, fullerReset: true},
	{spec: "kong:second=2 minute=10 hour=50 policy=redis", traffic: Policy{Limit: 10, Window: time.Minute}, capacity: 2, fullerReset: true},
	{spec: "traefik:average=1 period=1s burst=2", traffic: Policy{Limit: 1, Window: time.Second, Burst: 2}, capacity: 2},
	{spec: "traefik:average=100 period=1m burst=10", traffic: Policy{Limit: 100, Window: time.Minute, Burst: 10}, capacity: 10},
	{spec: "traefik:average=7 period=1300ms burst=20", traffic: Policy{Limit: 7, Window: 1300 * ms, Burst: 20}, capacity: 20},
	{spec: "aws-apigateway:rate=10 burst=20", traffic: Policy{Limit: 10, Window: time.Second, Burst: 20}, capacity: 20, notLeast: true},
	{spec: "aws-apigateway:rate=0.5 burst=3", traffic: Policy{Limit: 1, Window: 2 * time.Second, Burst: 3}, capacity: 3, notLeast: true},
	{spec: "spring-gateway:replenishRate=5 burstCapacity=10", traffic: Policy{Limit: 5, Window: time.Second, Burst: 10}, capacity: 10},
	{spec: "spring-gateway:replenishRate=2 burstCapacity=6 requestedTokens=2", traffic: Policy{Limit: 1, Window: time.Second, Burst: 3}, capacity: 3},
	{spec: "express-rate-limit:windowMs=1000 limit=5", traffic: Policy{Limit: 5, Window: time.Second}, capacity: 5},
	{spec: "express-rate-limit:windowMs=60000 limit=100", traffic: Policy{Limit: 100, Window: time.Minute}, capacity: 100},
	{spec: "rate-limiter-flexible:points=5 duration=1", traffic: Policy{Limit: 5, Window: time.Second}, capacity: 5},
	{spec: "rate-limiter-flexible:points=3 duration=2 blockDuration=1.5", traffic: Policy{Limit: 3, Window: 2 * time.Second}, capacity: 3},
}

// cloneProduct returns an independent copy of a product's limiter.
func cloneProduct(t *testing.T, lim Limiter) Limiter {
	switch l := lim.(type) {
	case *EnvoyLocalTimer:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	case *envoyLocalContinuous:
		return &envoyLocalContinuous{GCRA: clone(t, l.GCRA).(*GCRA), name: l.name}
	case *EnvoyRatelimit:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	case *Kong:
		c := *l
		c.state, c.small, c.windows = slices.Clone(l.state), slices.Clone(l.small), slices.Clone(l.windows)
		return &c
	case *Traefik:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	case *awsAPIGateway:
		return &awsAPIGateway{TokenBucket: clone(t, l.TokenBucket).(*TokenBucket), name: l.name}
	case *SpringGateway:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	case *ExpressRateLimit:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	case *RateLimiterFlexible:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	}
	t.Fatalf("cloneProduct: unknown limiter %T", lim)
	return nil
}

// TestProductsKeepTheContract holds every product's model to what the registry and the
// rest of the program ask: a canonical spec that parses to itself and names the limiter,
// a rank among the products', no limiter state before a decision and exact bytes after,
// and a bound with a formula and a source.
func TestProductsKeepTheContract(t *testing.T) {
	covered := map[string]bool{}
	for _, ps := range productSpecs {
		s, err := Parse(ps.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", ps.spec, err)
		}
		covered[s.Kind.Name] = true
		if s.Text != ps.spec {
			t.Errorf("%q is not canonical: %q", ps.spec, s.Text)
		}
		if s.Kind.Rank < 220 || s.Kind.Rank > 299 || s.Kind.Default || s.Kind.Script != "" {
			t.Errorf("%s: rank %d, default %v, script %q", s.Kind.Name, s.Kind.Rank, s.Kind.Default, s.Kind.Script)
		}
		lim, err := New(ps.spec, Policy{Limit: 1, Window: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if lim.Name() != ps.spec || lim.Keys() != 0 || lim.StateBytes() != 0 {
			t.Errorf("%s: named %q, %d keys, %d bytes before any decision", ps.spec, lim.Name(), lim.Keys(), lim.StateBytes())
		}
		if d := lim.Allow(2, epoch, 1); !d.Allowed || lim.Keys() != 3 || lim.StateBytes() <= 0 || lim.StateBytes()%3 != 0 {
			t.Errorf("%s: first request %+v, %d keys, %d bytes", ps.spec, d, lim.Keys(), lim.StateBytes())
		}
		b, ok := s.Model.Bound(ps.traffic, 0)
		if !ok || b.Value < float64(ps.capacity) || b.Formula == "" || b.Source == "" {
			t.Errorf("%s: bound %+v, %v", ps.spec, b, ok)
		}
		if _, ok := AdmitterOf(lim).(allowAdmitter); ok {
			t.Errorf("%s has no Admit of its own", ps.spec)
		}
	}
	for _, k := range Kinds() {
		if k.Rank >= 220 && k.Rank < 300 && !covered[k.Name] {
			t.Errorf("no productSpecs entry runs %s", k.Name)
		}
	}
}

// TestProductsKeepTheirWord is TestDecisionsKeepTheirWord for the products' models: on
// random traces, ordered and with stamps moved back and forth by a quarter window, a
// refused request passes after RetryAfter (and, for all but the token buckets, not a
// nanosecond before), Remaining passes now and Remaining+1 does not, and the capacity
// passes at Reset (and not a nanosecond before).
func TestProductsKeepTheirWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	for _, ps := range productSpecs {
		p := ps.traffic
		ordered := randomTrace(rng, p, 3, 1200)
		reordered := slices.Clone(ordered)
		quarter := int64(p.Window) / 4
		for i := range reordered {
			reordered[i].now += rng.Int64N(2*quarter+1) - quarter
		}
		for _, tr := range []struct {
			name  string
			trace []arrival
		}{{"ordered", ordered}, {"reordered", reordered}} {
			t.Run(ps.spec+"/"+tr.name, func(t *testing.T) {
				lim, _ := New(ps.spec, p)
				probe := func(key uint32, now, cost int64) bool {
					return cloneProduct(t, lim).Allow(key, now, cost).Allowed
				}
				admitted := 0
				for i, a := range tr.trace {
					d := lim.Allow(a.key, a.now, a.cost)
					at := func(format string, args ...any) {
						t.Helper()
						t.Fatalf("arrival %d (key %d, +%v, cost %d) → %+v: "+format,
							append([]any{i, a.key, time.Duration(a.now - epoch), a.cost, d}, args...)...)
					}
					if d.Allowed {
						admitted++
					}
					switch {
					case d.Allowed && d.RetryAfter != 0:
						at("admitted with a RetryAfter")
					case !d.Allowed && d.RetryAfter <= 0:
						at("refused without a RetryAfter")
					case d.RetryAfter == Never && a.cost <= ps.capacity:
						at("Never for a cost within capacity %d", ps.capacity)
					case d.RetryAfter != Never && a.cost > ps.capacity:
						at("no Never for a cost beyond capacity %d", ps.capacity)
					case !d.Allowed && d.RetryAfter != Never:
						if !probe(a.key, a.now+int64(d.RetryAfter), a.cost) {
							at("refused again after RetryAfter")
						}
						if !ps.notLeast && probe(a.key, a.now+int64(d.RetryAfter)-1, a.cost) {
							at("admitted 1ns before RetryAfter")
						}
					}
					if d.Remaining < 0 || d.Reset < 0 || d.Delay < 0 {
						at("negative field")
					}
					if d.Delay != 0 && (!d.Allowed || !strings.HasPrefix(ps.spec, "traefik:")) {
						at("a Delay from a limiter that does not delay this request")
					}
					if d.Remaining > 0 && !probe(a.key, a.now, d.Remaining) {
						at("Remaining %d would not pass", d.Remaining)
					}
					if probe(a.key, a.now, d.Remaining+1) {
						at("Remaining+1 = %d would pass", d.Remaining+1)
					}
					if !probe(a.key, a.now+int64(d.Reset), ps.capacity) {
						at("capacity %d does not pass at Reset", ps.capacity)
					}
					if !ps.notLeast && !ps.fullerReset && d.Reset > 0 && probe(a.key, a.now+int64(d.Reset)-1, ps.capacity) {
						at("capacity %d passes 1ns before Reset", ps.capacity)
					}
				}
				if admitted < len(tr.trace)/20 || admitted > len(tr.trace)*19/20 {
					t.Errorf("%d of %d admitted: the trace does not exercise both outcomes", admitted, len(tr.trace))
				}
			})
		}
	}
}

// TestProductsStayWithinTheirBounds drives each model with overload (many requests per
// instant, gaps of the promised rate's spacing and pauses) on one key and requires the
// most admitted in any window of length T to stay within the model's bound over T, for T
// of a window, a fraction and several windows.
func TestProductsStayWithinTheirBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 2))
	for _, ps := range productSpecs {
		s, _ := Parse(ps.spec)
		p := ps.traffic
		lim, _ := s.Model.New(p)
		var admittedAt []int64
		for _, a := range overloadTrace(rng, p, 1, 6000) {
			if lim.Allow(0, a.at, a.cost).Allowed {
				for range a.cost {
					admittedAt = append(admittedAt, a.at)
				}
			}
		}
		for _, span := range []time.Duration{p.Window / 3, p.Window, 3 * p.Window} {
			b, ok := s.Model.Bound(p, span)
			if !ok {
				t.Fatalf("%s: no bound", ps.spec)
			}
			peak := int64(0)
			j := 0
			for i := range admittedAt { // windows (t−T, t] ending at each admission
				for admittedAt[i]-admittedAt[j] >= int64(span) {
					j++
				}
				peak = max(peak, int64(i-j+1))
			}
			if peak > b.MaxAdmitted() {
				t.Errorf("%s over %v: %d admitted in one window, above its bound %v (%s)", ps.spec, span, peak, b.Value, b.Formula)
			}
			if span == p.Window {
				t.Logf("%s: peak %d per %v, bound %.1f", ps.spec, peak, span, b.Value)
			}
		}
	}
}

// TestProductSpecErrors: a spec a product would not accept is one error naming the
// parameter and the unit it wants.
func TestProductSpecErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"envoy-local:max_tokens=10":                                        "max_tokens and fill_interval are required",
		"envoy-local:max_tokens=10 fill_interval=10ms":                     "fill_interval: want a duration of at least 50ms",
		"envoy-local:max_tokens=10 fill_interval=1s version=2.0":           `version: want an Envoy release as 1.30 or 1.31.2, got "2.0"`,
		"envoy-local:max_tokens=-1 fill_interval=1s":                       "max_tokens: want a whole number of tokens, at least 1",
		"envoy-ratelimit:unit=fortnight requests_per_unit=1":               `unit: want second, minute, hour, day, week, month or year, got "fortnight"`,
		"envoy-ratelimit:unit=minute":                                      "unit and requests_per_unit are required",
		"envoy-ratelimit:unit=minute requests_per_unit=1 shadow_mode=true": "shadow_mode is a flag",
		"traefik:period=1s":                                                "average is required",
		"traefik:average=10 period=-1s":                                    "period: want a duration of at least 1ns",
		"traefik:average=10 burst=x":                                       `burst: want a whole number of requests, at least 0 and at most 2⁵³, got "x"`,
		"aws-apigateway:rate=0":                                            "rate: want requests per second above 0",
		"aws-apigateway:rate=1.2345":                                       "up to three decimals",
		"spring-gateway:burstCapacity=10":                                  "replenishRate is required",
		"spring-gateway:replenishRate=10 burstCapacity=5":                  "burstCapacity: must be at least replenishRate",
		"express-rate-limit:windowMs=1m":                                   `windowMs: want a whole number of milliseconds, at least 1 and at most 2⁵³, got "1m"`,
		"express-rate-limit:windowMs=3000000000":                           "windowMs: want at most 2147483647 ms",
		"express-rate-limit:max=5":                                         `unknown parameter "max" (want windowMs, limit)`,
		"rate-limiter-flexible:points=5":                                   "points and duration are required",
		"rate-limiter-flexible:points=5 duration=1.0005":                   "duration: want a number of seconds in whole milliseconds",
		"rate-limiter-flexible:points=5 duration=60 blockDuration=-1":      "blockDuration: want a number of seconds",
		"rate-limiter-flexible:points=0 duration=60":                       "points: want a whole number of points, at least 1",
	} {
		_, err := Parse(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", spec, err, want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), Lookup(spec).Name+": ") {
			t.Errorf("Parse(%q) = %v: the error does not name the product first", spec, err)
		}
	}
}

// FuzzParseProductSpec: whatever a product's spec says, Parse gives a canonical spec that
// parses to itself, or one error; and a spec that parses builds a limiter that decides a
// few requests, stamps back and forth, without panicking and with its own name.
func FuzzParseProductSpec(f *testing.F) {
	for _, ps := range productSpecs {
		f.Add(ps.spec, int64(ps.traffic.Window))
	}
	f.Add("kong:month=5 year=10", int64(time.Hour))
	f.Add("rate-limiter-flexible:points=1 duration=0 blockDuration=0.001", int64(time.Millisecond))
	f.Add("envoy-ratelimit:unit=year requests_per_unit=9223372036854775807", int64(time.Second))
	f.Add("traefik:average=9223372036 period=1ns burst=9223372036854775807", int64(1))
	f.Fuzz(func(t *testing.T, spec string, step int64) {
		s, err := Parse(spec)
		if err != nil || len(s.Kind.Params) == 0 {
			return
		}
		again, err := Parse(s.Text)
		if err != nil || again.Text != s.Text {
			t.Fatalf("%q → %q → %q, %v", spec, s.Text, again.Text, err)
		}
		lim, err := s.Model.New(Policy{Limit: 1, Window: time.Second})
		if err != nil {
			return
		}
		if lim.Name() != s.Text {
			t.Fatalf("%q builds %q", s.Text, lim.Name())
		}
		now := epoch
		for i := range int64(20) {
			now += (step % int64(time.Hour)) * (1 - 2*(i%3/2)) // forward, forward, back
			d := lim.Allow(uint32(i%2), now, 1+i%3)
			if d.Remaining < 0 || d.RetryAfter < 0 || d.Reset < 0 || d.Delay < 0 || d.Allowed && d.RetryAfter != 0 {
				t.Fatalf("%s: request %d: %+v", s.Text, i, d)
			}
		}
		s.Model.Bound(Policy{Limit: 1, Window: time.Second}, time.Duration(step))
	})
}
