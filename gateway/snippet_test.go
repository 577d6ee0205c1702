package gateway_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/traffic"
)

// snippetFormats are, for each product Snippet writes, the configuration format import
// reads its snippet in and a file name that format sniffs.
var snippetFormats = map[string]struct{ format, file string }{
	"nginx":       {"nginx", "rlsim.conf"},
	"haproxy":     {"haproxy", "haproxy.cfg"},
	"envoy-local": {"envoy", "envoy.yaml"},
	"kong":        {"kong", "kong.yml"},
	"traefik":     {"traefik", "dynamic.yml"},
}

// snippetCases are, for each product, specs in the form import writes them and keys the
// product counts on: every spec is tried with every key.
var snippetCases = []struct {
	specs, keys []string
}{
	{
		specs: []string{"nginx:rate=10r/s", "nginx:rate=10r/s burst=20 nodelay", "nginx:rate=30r/m burst=12 delay=8",
			"nginx:rate=10r/s burst=5 nodelay + rate=2r/s burst=10"},
		keys: []string{"ip", "xff:1", "xff-leftmost", "route", "user", "api-key", "tenant", "account"},
	},
	{
		specs: []string{"haproxy:period=10s gt=20", "haproxy:period=1s ge=5", "haproxy:period=500ms gt=1", "haproxy:period=1m ge=100"},
		keys:  []string{"ip", "ipv6/64", "xff:1", "xff:3", "xff-leftmost", "route", "user", "api-key"},
	},
	{
		specs: []string{"envoy-local:max_tokens=20 tokens_per_fill=10 fill_interval=1s", "envoy-local:max_tokens=5 fill_interval=250ms",
			"envoy-local:max_tokens=100 tokens_per_fill=100 fill_interval=1m"},
		keys: []string{"route"},
	},
	{
		specs: []string{"kong:minute=100", "kong:second=5 minute=100 hour=1000", "kong:minute=60 policy=redis", "kong:day=10000 policy=local"},
		keys:  []string{"ip", "user", "api-key", "tenant"},
	},
	{
		specs: []string{"traefik:average=100", "traefik:average=100 period=1m burst=50", "traefik:average=5 period=10s burst=0"},
		keys:  []string{"ip", "ipv6/56", "xff:1", "xff:2", "user", "api-key", "account"},
	},
}

// readSnippet reads a snippet back as import does, from a file of the product's name, in
// the format import detects (which must be the product's), and returns the one spec and
// key it finds: several limits of one location as one stacked spec.
func readSnippet(t testing.TB, product, snippet string) (spec, key string, r *gateway.Result) {
	t.Helper()
	f, ok := snippetFormats[product]
	if !ok {
		t.Fatalf("no format for %s", product)
	}
	r, err := gateway.Parse(&gateway.Source{Path: f.file, Name: f.file, Data: []byte(snippet), Files: gateway.OSFiles{}}, "")
	if err != nil {
		t.Fatalf("import refuses the snippet: %v\n%s", err, snippet)
	}
	if r.Format != f.format {
		t.Fatalf("import reads the snippet as %s, want %s\n%s", r.Format, f.format, snippet)
	}
	groups := r.Groups()
	if len(groups) != 1 {
		t.Fatalf("import finds %d locations, want 1: %v\n%s", len(groups), r.Found, snippet)
	}
	var sets []string
	for i, found := range groups[0].Found {
		if i > 0 && found.Key != key {
			t.Fatalf("the limits of one location key on %q and %q", key, found.Key)
		}
		key = found.Key
		_, set, _ := strings.Cut(found.Spec(), ":")
		sets = append(sets, set)
		spec = found.Product
	}
	return spec + ":" + strings.Join(sets, " + "), key, r
}

// Every snippet reads back through import as its spec and key, in the format import
// detects, and the spec is one the models take, written as they write it.
func TestSnippetReadsBack(t *testing.T) {
	n := 0
	for _, c := range snippetCases {
		for _, spec := range c.specs {
			if got := algorithms.Canonical(spec); got != spec || !algorithms.Known(spec) {
				t.Fatalf("%q is not a canonical spec (%q)", spec, got)
			}
			for _, key := range c.keys {
				if _, err := traffic.ParseKeyer(key); err != nil {
					t.Fatal(err)
				}
				snippet, err := gateway.Snippet(spec, key)
				if err != nil {
					t.Errorf("Snippet(%q, %q): %v", spec, key, err)
					continue
				}
				if !strings.Contains(snippet, "rlsim spec: "+spec+"\n") || !strings.Contains(snippet, "rlsim key:  "+key+"\n") {
					t.Errorf("Snippet(%q, %q) does not name the spec and key:\n%s", spec, key, snippet)
				}
				product, _, _ := strings.Cut(spec, ":")
				gotSpec, gotKey, _ := readSnippet(t, product, snippet)
				if gotSpec != spec || gotKey != key {
					t.Errorf("Snippet(%q, %q) reads back as %q keyed %q:\n%s", spec, key, gotSpec, gotKey, snippet)
				}
				n++
			}
		}
	}
	t.Logf("%d snippets read back", n)
}

// A header key reads back as the identity the header carries, or with no key and a
// warning naming the header; a spec written in another form than import's reads back in
// import's; Envoy's version is no part of its configuration.
func TestSnippetReadsBackInImportsWords(t *testing.T) {
	tests := []struct {
		spec, key         string
		wantSpec, wantKey string
		warning           string
	}{
		{"nginx:rate=10r/s", "header:X-Api-Key", "nginx:rate=10r/s", "api-key", ""},
		{"nginx:rate=10r/s", "header:x-user-id", "nginx:rate=10r/s", "user", ""},
		{"nginx:rate=10r/s", "header:X-Client", "nginx:rate=10r/s", "", "X-Client header"},
		{"nginx:nodelay burst=3 rate=1r/s", "ip", "nginx:rate=1r/s burst=3 nodelay", "ip", ""},
		{"haproxy:period=60s gt=20", "header:X-Tenant-Id", "haproxy:period=1m gt=20", "tenant", ""},
		{"haproxy:period=1d gt=20", "header:X-Session", "haproxy:period=24h gt=20", "", "x-session header"},
		{"envoy-local:max_tokens=5 fill_interval=1000ms version=1.30", "route", "envoy-local:max_tokens=5 fill_interval=1s", "route", ""},
		{"kong:minute=10", "header:Apikey", "kong:minute=10", "api-key", ""},
		{"kong:hour=10", "header:X-Client", "kong:hour=10", "", "X-Client header"},
		{"traefik:average=10 period=60", "header:X-Account-Id", "traefik:average=10 period=1m", "account", ""},
		{"traefik:average=10 period=90s", "header:X-Client", "traefik:average=10 period=90s", "", "X-Client header"},
	}
	for _, tt := range tests {
		snippet, err := gateway.Snippet(tt.spec, tt.key)
		if err != nil {
			t.Errorf("Snippet(%q, %q): %v", tt.spec, tt.key, err)
			continue
		}
		product, _, _ := strings.Cut(tt.spec, ":")
		spec, key, r := readSnippet(t, product, snippet)
		if spec != tt.wantSpec || key != tt.wantKey {
			t.Errorf("Snippet(%q, %q) reads back as %q keyed %q, want %q keyed %q:\n%s", tt.spec, tt.key, spec, key, tt.wantSpec, tt.wantKey, snippet)
		}
		if same(t, tt.spec, tt.wantSpec) != nil {
			t.Errorf("%q and %q decide otherwise", tt.spec, tt.wantSpec)
		}
		if tt.warning != "" && !slices.ContainsFunc(r.Warnings, func(w gateway.Warning) bool {
			return strings.Contains(strings.ToLower(w.Msg), strings.ToLower(tt.warning))
		}) {
			t.Errorf("Snippet(%q, %q): no warning naming %q, got %v", tt.spec, tt.key, tt.warning, r.Warnings)
		}
	}
}

// same runs the models of two specs on one traffic of two keys (bursts and gaps over a
// minute, Envoy's version= left out) and returns the first request they decide otherwise,
// nil when they agree on every one.
func same(t testing.TB, a, b string) []int64 {
	t.Helper()
	strip := func(spec string) string {
		product, rest, _ := strings.Cut(spec, ":")
		if product != "envoy-local" {
			return spec
		}
		var keep []string
		for _, w := range strings.Fields(rest) {
			if !strings.HasPrefix(w, "version=") {
				keep = append(keep, w)
			}
		}
		return product + ":" + strings.Join(keep, " ")
	}
	policy := algorithms.Policy{Limit: 10, Window: time.Second}
	la, err := algorithms.New(strip(a), policy)
	if err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	lb, err := algorithms.New(strip(b), policy)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	at := int64(0)
	for i := range 3000 {
		// Bursts of 40 a few ms apart, then a gap that grows: every model refuses some and
		// admits some.
		if i%40 == 0 {
			at += int64(i%7+1) * int64(370*time.Millisecond)
		}
		at += int64(3 * time.Millisecond)
		key := uint32(i % 2)
		da, db := la.Allow(key, at, 1), lb.Allow(key, at, 1)
		if da.Allowed != db.Allowed || da.Delay != db.Delay {
			return []int64{int64(i), at}
		}
	}
	return nil
}

// A key the product cannot count on, a spec that does not parse or names a product
// without a snippet: one error naming the key or the spec and the product.
func TestSnippetRefuses(t *testing.T) {
	tests := []struct{ spec, key, want string }{
		{"nginx:rate=10r/s", "xff:2", "key xff:2: nginx cannot count on it"},
		{"nginx:rate=10r/s", "ipv6/64", "key ipv6/64: nginx cannot count on it"},
		{"envoy-local:max_tokens=5 fill_interval=1s", "ip", "key ip: Envoy's local_ratelimit cannot count on it"},
		{"envoy-local:max_tokens=5 fill_interval=1s", "user", "key user: Envoy's local_ratelimit cannot count on it"},
		{"kong:minute=5", "xff:1", "key xff:1: Kong's rate-limiting plugin cannot count on it: the plugin counts on the client address Kong settles on"},
		{"kong:minute=5", "route", "key route: Kong's rate-limiting plugin cannot count on it"},
		{"traefik:average=5", "route", "key route: Traefik's rateLimit cannot count on it"},
		{"traefik:average=5", "ipv6/0", "key ipv6/0: Traefik's rateLimit cannot count on it"},
		{"traefik:average=5", "xff-leftmost", "key xff-leftmost: Traefik's rateLimit cannot count on it"},
		{"nginx:rate=10r/s", "addr", `unknown key "addr"`},
		{"haproxy:period=10s gt=5", "xff:0", `key "xff:0": the number of trusted proxies`},
		{"haproxy:period=10s gt=5", "header:X Y", `key "header:X Y"`},
		{"haproxy:period=10s gt=0", "ip", "gt=0 refuses every request"},
		{"haproxy:period=10s ge=1", "ip", "ge=1 refuses every request"},
		{"haproxy:period=10s", "ip", "gt=N or ge=N"},
		{"haproxy:period=10us gt=3", "ip", `period "10us"`},
		{"nginx:rate=10", "ip", `rate "10"`},
		{"nginx:rate=10r/s burst=0", "ip", `burst "0"`},
		{"nginx:rate=10r/s delay=2 nodelay", "ip", "nodelay and delay"},
		{"nginx:rate=10r/s + ", "ip", "set 2 of the parameters joined by + is empty"},
		{"kong:minute=100 hour=10", "ip", "hour=10 is lower than minute=100"},
		{"kong:minute=10 policy=cluster", "ip", "policy"},
		{"traefik:period=1s", "ip", "average is required"},
		{"envoy-local:max_tokens=5 fill_interval=10ms", "route", "fill_interval"},
		{"envoy-local:max_tokens=5 fill_interval=1s + max_tokens=3 fill_interval=1s", "route", "not several joined by +"},
		{"envoy-ratelimit:unit=minute requests_per_unit=100", "ip", `no configuration snippet for "envoy-ratelimit"`},
		{"leaky-bucket", "ip", `no configuration snippet for "leaky-bucket"`},
		{"token-bucket:limit=10", "ip", "limit and window are required"},
		{"token-bucket", "ip", "limit and window are required"},
		{"gcra:limit=0 window=1s", "ip", "limit: want a whole number"},
		{"gcra:limit=4503599627370497 window=1s", "ip", "limit: want a whole number"},
		{"sliding-log:limit=3 window=1ns", "ip", "window: want a duration in whole microseconds"},
		{"fixed-window:limit=10 window=1s burst=5", "ip", `unknown parameter "burst"`},
		{"token-bucket:limit=10 window=1s", "header:", `key "header:"`},
		{"nginx:rate=10r/s rate=5r/s", "ip", "rate given twice"},
		{"nginx:rate=10r/s zone=x", "ip", `unknown parameter "zone"`},
	}
	for _, tt := range tests {
		got, err := gateway.Snippet(tt.spec, tt.key)
		if err == nil {
			t.Errorf("Snippet(%q, %q) = nil error, want %q:\n%s", tt.spec, tt.key, tt.want, got)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Snippet(%q, %q): %v, want %q", tt.spec, tt.key, err, tt.want)
		}
		if got != "" {
			t.Errorf("Snippet(%q, %q) returns text with its error", tt.spec, tt.key)
		}
	}
}

// The real nginx and HAProxy accept every snippet of theirs (nginx -t, haproxy -c), where
// they are installed.
func TestSnippetsCheckInTheRealProducts(t *testing.T) {
	dir := t.TempDir()
	checks := map[string]func(snippet string) ([]byte, error){}
	if bin, err := exec.LookPath("nginx"); err == nil {
		checks["nginx"] = func(snippet string) ([]byte, error) {
			conf := "pid " + filepath.Join(dir, "nginx.pid") + "; error_log stderr; events {}\nhttp {\naccess_log off;\n" + snippet + "}\n"
			path := filepath.Join(dir, "nginx.conf")
			if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			return exec.Command(bin, "-t", "-q", "-p", dir, "-c", path).CombinedOutput()
		}
	}
	if bin, err := exec.LookPath("haproxy"); err == nil {
		checks["haproxy"] = func(snippet string) ([]byte, error) {
			conf := "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\n" +
				strings.Replace(snippet, "frontend fe\n", "frontend fe\n    bind 127.0.0.1:1\n", 1)
			path := filepath.Join(dir, "haproxy.cfg")
			if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			return exec.Command(bin, "-c", "-q", "-f", path).CombinedOutput()
		}
	}
	if len(checks) == 0 {
		t.Skip("neither nginx nor haproxy is installed")
	}
	n := 0
	for _, c := range snippetCases {
		for _, spec := range c.specs {
			product, _, _ := strings.Cut(spec, ":")
			check := checks[product]
			if check == nil {
				continue
			}
			for _, key := range append(slices.Clone(c.keys), "header:X-Client") {
				snippet, err := gateway.Snippet(spec, key)
				if err != nil {
					t.Fatal(err)
				}
				if out, err := check(snippet); err != nil {
					t.Errorf("%s refuses the snippet of %q keyed %s: %v %s\n%s", product, spec, key, err, out, snippet)
				}
				n++
			}
		}
	}
	t.Logf("%d snippets checked", n)
}
