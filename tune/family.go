package tune

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Family is what the search varies for one algorithm or product: how a candidate's limit
// L per window W (and burst B, for a bucket) is written as a spec of that family.
type Family struct {
	// Name is the algorithm's name or the product's ("token-bucket", "nginx").
	Name string
	// Bucket says the family has a burst beside its rate: the search bisects B at each
	// rate L/W. A window family is searched on L alone.
	Bucket bool
	// spec writes the candidate as a spec; ok is false where the family cannot express it
	// (nginx's rate is per second or per minute only).
	spec func(l int64, w time.Duration, b int64) (text string, ok bool)
	// skip, when set, proves a key is never refused by a candidate (see skip.go).
	skip skipRule
}

// Families lists the families Search knows, in report order: the textbook algorithms
// and the products' models whose parameters map onto a limit, a window and a burst.
func Families() []string {
	var out []string
	for _, f := range families {
		out = append(out, f.Name)
	}
	return out
}

// LookupFamily returns the family named name, or an error listing them.
func LookupFamily(name string) (*Family, error) {
	for i := range families {
		if families[i].Name == name {
			return &families[i], nil
		}
	}
	return nil, fmt.Errorf("tune searches no %q (want one of %s)", name, strings.Join(Families(), ", "))
}

func textbook(name string) func(int64, time.Duration, int64) (string, bool) {
	return func(int64, time.Duration, int64) (string, bool) { return name, true }
}

// families are in the order of algorithms' ranks; a test checks every name is registered.
var families = []Family{
	{Name: algorithms.FixedWindowName, spec: textbook(algorithms.FixedWindowName), skip: skipAligned},
	{Name: algorithms.SlidingLogName, spec: textbook(algorithms.SlidingLogName), skip: skipTrailing},
	{Name: algorithms.SlidingWindowName, spec: textbook(algorithms.SlidingWindowName), skip: skipTwoAligned},
	{Name: algorithms.TokenBucketName, Bucket: true, spec: textbook(algorithms.TokenBucketName), skip: skipCurve},
	{Name: algorithms.LeakyBucketName, Bucket: true, spec: textbook(algorithms.LeakyBucketName)},
	{Name: algorithms.GCRAName, Bucket: true, spec: textbook(algorithms.GCRAName), skip: skipCurve},
	// nginx's burst=N lets N+1 requests through at once: the candidate's B is what passes
	// at once, so the spec writes burst=B-1. nodelay always: a tuned limit refuses rather
	// than queues.
	{Name: algorithms.NginxName, Bucket: true, spec: func(l int64, w time.Duration, b int64) (string, bool) {
		unit := map[time.Duration]string{time.Second: "r/s", time.Minute: "r/m"}[w]
		if unit == "" {
			return "", false
		}
		s := fmt.Sprintf("nginx:rate=%d%s", l, unit)
		if b > 1 {
			s += fmt.Sprintf(" burst=%d", b-1)
		}
		return s + " nodelay", true
	}},
	{Name: algorithms.HAProxyName, spec: func(l int64, w time.Duration, _ int64) (string, bool) {
		d, ok := productDuration(w)
		return fmt.Sprintf("haproxy:period=%s gt=%d", d, l), ok
	}},
	{Name: algorithms.EnvoyLocalName, Bucket: true, spec: func(l int64, w time.Duration, b int64) (string, bool) {
		d, ok := productDuration(w)
		return fmt.Sprintf("envoy-local:max_tokens=%d tokens_per_fill=%d fill_interval=%s", b, l, d), ok && w >= 50*time.Millisecond
	}},
	{Name: algorithms.KongName, spec: func(l int64, w time.Duration, _ int64) (string, bool) {
		unit := map[time.Duration]string{time.Second: "second", time.Minute: "minute", time.Hour: "hour", 24 * time.Hour: "day"}[w]
		return fmt.Sprintf("kong:%s=%d", unit, l), unit != ""
	}},
	{Name: algorithms.TraefikName, Bucket: true, spec: func(l int64, w time.Duration, b int64) (string, bool) {
		d, ok := productDuration(w)
		return fmt.Sprintf("traefik:average=%d period=%s burst=%d", l, d, b), ok
	}},
}

// productDuration writes w as the products write durations: 10s, 1m, 1h, 500ms.
func productDuration(w time.Duration) (string, bool) {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if w%u.d == 0 {
			return fmt.Sprintf("%d%s", w/u.d, u.name), true
		}
	}
	return "", false
}

// ForProduct maps a gateway --for names to the family that models it: envoy is Envoy's
// local rate limit, redis-lua the token bucket's store script.
func ForProduct(product string) (string, error) {
	m := map[string]string{"nginx": "nginx", "haproxy": "haproxy", "envoy": "envoy-local", "kong": "kong",
		"traefik": "traefik", "redis-lua": algorithms.TokenBucketName}
	f, ok := m[product]
	if !ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return "", fmt.Errorf("no gateway %q (want one of %s)", product, strings.Join(keys, ", "))
	}
	return f, nil
}

// DefaultFamilies are searched when none is named: a bucket, a two-counter window and a
// fixed window, the three shapes people deploy.
func DefaultFamilies() []string {
	return []string{algorithms.FixedWindowName, algorithms.SlidingWindowName, algorithms.TokenBucketName}
}

// parseSpec is the canonical text of a spec.
func parseSpec(text string) (string, error) {
	spec, err := algorithms.Parse(text)
	if err != nil {
		return "", err
	}
	return spec.Text, nil
}
