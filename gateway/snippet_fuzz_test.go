package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/traffic"
)

// fuzzKeys are, for each product, the keys its snippets count on, for the fuzz to pick
// from.
var fuzzKeys = map[string][]string{
	"nginx":       {"ip", "xff:1", "xff-leftmost", "route", "user", "api-key", "tenant", "account"},
	"haproxy":     {"ip", "ipv6/48", "ipv6/128", "xff:1", "xff:7", "xff:64", "xff-leftmost", "route", "user", "api-key"},
	"envoy-local": {"route"},
	"kong":        {"ip", "user", "api-key", "tenant", "account"},
	"traefik":     {"ip", "ipv6/64", "xff:1", "xff:9", "user", "api-key", "tenant"},
}

// fuzzSpec builds a valid spec of a product, in the form import writes it, from the
// fuzzer's numbers.
func fuzzSpec(product int, a, b, c uint32, flags uint8) (name, spec string) {
	// dur is a duration of at least least, and at most the 596 hours HAProxy's 32-bit
	// milliseconds hold.
	dur := func(n uint32, least time.Duration) string {
		units := []time.Duration{time.Millisecond, time.Second, time.Minute, time.Hour}
		d := time.Duration(n%5000+1) * units[int(flags>>4)%len(units)]
		return fmtDuration(min(max(d, least), 596*time.Hour))
	}
	switch product % 5 {
	case 0:
		set := func(a, b uint32, flags uint8) string {
			s := fmt.Sprintf("rate=%d%s", a%100000+1, []string{"r/s", "r/m"}[flags&1])
			if flags&2 != 0 {
				s += fmt.Sprintf(" burst=%d", b%1000+1)
			}
			switch flags >> 2 & 3 {
			case 1:
				s += " nodelay"
			case 2:
				s += fmt.Sprintf(" delay=%d", b%77+1)
			}
			return s
		}
		spec = "nginx:" + set(a, b, flags)
		if flags&0x40 != 0 {
			spec += " + " + set(c, a^b, flags>>1)
		}
		return "nginx", spec
	case 1:
		op := []string{"gt", "ge"}[flags&1]
		return "haproxy", fmt.Sprintf("haproxy:period=%s %s=%d", dur(a, time.Millisecond), op, b%100000+2)
	case 2:
		spec = fmt.Sprintf("envoy-local:max_tokens=%d", a%100000+1)
		if flags&1 != 0 {
			spec += fmt.Sprintf(" tokens_per_fill=%d", b%1000+1)
		}
		return "envoy-local", spec + " fill_interval=" + dur(c, 50*time.Millisecond)
	case 3:
		var parts []string
		limit := uint64(a%1000 + 1)
		for i, p := range []string{"second", "minute", "hour", "day", "month", "year"} {
			if flags>>i&1 != 0 {
				parts = append(parts, fmt.Sprintf("%s=%d", p, limit))
				limit += uint64(b % 100000)
			}
		}
		if len(parts) == 0 {
			parts = []string{fmt.Sprintf("minute=%d", limit)}
		}
		if c%3 > 0 {
			parts = append(parts, "policy="+[]string{"", "local", "redis"}[c%3])
		}
		return "kong", "kong:" + strings.Join(parts, " ")
	}
	spec = fmt.Sprintf("traefik:average=%d", a%100000+1)
	if flags&1 != 0 {
		spec += " period=" + dur(b, time.Millisecond)
	}
	if flags&2 != 0 {
		spec += fmt.Sprintf(" burst=%d", c%1000)
	}
	return "traefik", spec
}

// fmtDuration writes d as import writes a duration: its largest whole unit.
func fmtDuration(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d%u.unit == 0 {
			return fmt.Sprint(int64(d/u.unit)) + u.name
		}
	}
	return d.String()
}

// Random valid specs of every product, keyed on each key the product counts on, read
// back through import as the same spec and key.
func FuzzSnippetRoundTrip(f *testing.F) {
	for p := range 5 {
		f.Add(uint8(p), uint32(10), uint32(20), uint32(3), uint8(0xff), uint8(p))
		f.Add(uint8(p), uint32(99999), uint32(1), uint32(7), uint8(0x16), uint8(p+3))
	}
	f.Fuzz(func(t *testing.T, product uint8, a, b, c uint32, flags, key uint8) {
		name, spec := fuzzSpec(int(product), a, b, c, flags)
		if got := algorithms.Canonical(spec); got != spec || !algorithms.Known(spec) {
			t.Fatalf("fuzzSpec built %q, which the models read as %q", spec, got)
		}
		keys := fuzzKeys[name]
		k := keys[int(key)%len(keys)]
		snippet, err := gateway.Snippet(spec, k)
		if err != nil {
			t.Fatalf("Snippet(%q, %q): %v", spec, k, err)
		}
		gotSpec, gotKey, _ := readSnippet(t, name, snippet)
		if gotSpec != spec || gotKey != k {
			t.Fatalf("Snippet(%q, %q) reads back as %q keyed %q:\n%s", spec, k, gotSpec, gotKey, snippet)
		}
	})
}

// Any spec and key: Snippet never panics, writes only what the models and --key take,
// and what it writes reads back through import as a spec that decides as the one given,
// keyed on the key given (a header key on the identity it carries, or none).
func FuzzSnippet(f *testing.F) {
	for _, c := range snippetCases {
		for i, spec := range c.specs {
			f.Add(spec, c.keys[i%len(c.keys)])
		}
	}
	f.Add("nginx:burst=5 rate=10r/s  nodelay", "header:X-Api-Key")
	f.Add("traefik:average=7 period=90", "header:x_user")
	f.Add("haproxy:period=01s gt=3", "ip")
	f.Add("kong:minute=2 second=1", "tenant")
	f.Add("envoy-local:fill_interval=1m30s max_tokens=3 version=v1.30", "route")
	f.Add("token-bucket:limit=10 window=1s burst=20", "xff:3")
	f.Add("sliding-window:window=250ms limit=4", "ipv6/64")
	f.Fuzz(func(t *testing.T, spec, key string) {
		snippet, err := gateway.Snippet(spec, key)
		if err != nil {
			if snippet != "" {
				t.Fatalf("Snippet(%q, %q) returns text with its error %v", spec, key, err)
			}
			return
		}
		keyer, err := traffic.ParseKeyer(key)
		if err != nil {
			t.Fatalf("Snippet(%q, %q) takes a key --key refuses: %v", spec, key, err)
		}
		product, _, _ := strings.Cut(strings.TrimSpace(spec), ":")
		if _, ok := snippetFormats[product]; !ok {
			// A built-in algorithm on Redis: its parameters are a policy the algorithm
			// takes.
			if _, err := algorithms.New(product, redisPolicy(t, strings.TrimSpace(spec))); err != nil {
				t.Fatalf("Snippet(%q, %q) takes a policy %s refuses: %v", spec, key, product, err)
			}
			return
		}
		if _, err := algorithms.Parse(spec); err != nil {
			t.Fatalf("Snippet(%q, %q) writes a spec the models refuse: %v", spec, key, err)
		}
		gotSpec, gotKey, _ := readSnippet(t, product, snippet)
		if at := same(t, spec, gotSpec); at != nil {
			t.Fatalf("Snippet(%q, %q) reads back as %q, which decides request %d otherwise:\n%s", spec, key, gotSpec, at[0], snippet)
		}
		want := keyer.String()
		if h, ok := strings.CutPrefix(want, "header:"); ok {
			want = map[string]string{"x-api-key": "api-key", "api-key": "api-key", "apikey": "api-key", "x-apikey": "api-key",
				"x-user": "user", "x-user-id": "user", "x-userid": "user", "x-username": "user", "x-tenant": "tenant",
				"x-tenant-id": "tenant", "x-account": "account", "x-account-id": "account"}[h]
		}
		if gotKey != want {
			t.Fatalf("Snippet(%q, %q) reads back keyed %q, want %q:\n%s", spec, key, gotKey, want, snippet)
		}
	})
}
