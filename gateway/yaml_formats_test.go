package gateway_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/gateway"
)

func TestEnvoyFixture(t *testing.T) {
	r, err := gateway.Read("testdata/envoy/envoy.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"listener ingress, virtual host api, route /login | envoy-local:max_tokens=5 tokens_per_fill=1 fill_interval=12s | route | envoy.yaml:26",
		"listener ingress | envoy-local:max_tokens=20 tokens_per_fill=10 fill_interval=1s |  | envoy.yaml:43",
	}
	if got := summary(r); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f := r.Found[1]; f.Status != 429 || f.Name != "http_local_rate_limiter" || f.Promise != (gateway.Promise{Limit: 10, Window: time.Second, Burst: 20}) {
		t.Errorf("the listener's limit: %+v", f)
	}
	if w := warnings(r); !strings.Contains(w, "envoy.yaml:43: local_ratelimit at listener ingress: one bucket that every request through the filter shares") {
		t.Errorf("warnings %s", w)
	}
}

const envoyFilter = `"@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
stat_prefix: rl
`

const envoyOn = `filter_enabled: {default_value: {numerator: 100}}
filter_enforced: {default_value: {numerator: 100, denominator: HUNDRED}}
`

func TestEnvoyCases(t *testing.T) {
	tests := []struct {
		body    string
		want    []string
		warning string
	}{
		{"token_bucket: {max_tokens: 10, fill_interval: 0.5s}\n" + envoyOn, []string{"envoy-local:max_tokens=10 fill_interval=500ms"}, "one bucket"},
		{"token_bucket: {max_tokens: 10, tokens_per_fill: {value: 5}, fill_interval: 60s}\n" + envoyOn, []string{"envoy-local:max_tokens=10 tokens_per_fill=5 fill_interval=1m"}, "one bucket"},
		{"token_bucket: {max_tokens: 10, fill_interval: 1s}\n", nil, "filter_enabled is not set or 0%"},
		{"token_bucket: {max_tokens: 10, fill_interval: 1s}\nfilter_enabled: {default_value: {numerator: 100}}\n", nil, "filter_enforced is not set"},
		{"token_bucket: {max_tokens: 10, fill_interval: 1s}\nfilter_enabled: {default_value: {numerator: 5000, denominator: TEN_THOUSAND}}\nfilter_enforced: {default_value: {numerator: 100}}\n", []string{"envoy-local:max_tokens=10 fill_interval=1s"}, "enabled for 50% and enforced for 100%"},
		{"token_bucket: {max_tokens: 10, fill_interval: 1s}\n" + envoyOn + "descriptors:\n  - entries: [{key: k, value: v}]\n    token_bucket: {max_tokens: 1, fill_interval: 1s}\n", []string{"envoy-local:max_tokens=10 fill_interval=1s"}, "1 descriptors with buckets of their own are not modelled"},
		{"token_bucket: {max_tokens: 10, fill_interval: 1s}\n" + envoyOn + "local_rate_limit_per_downstream_connection: true\n", []string{"envoy-local:max_tokens=10 fill_interval=1s"}, "one bucket per connection"},
		{envoyOn, nil, ""},
	}
	for _, tt := range tests {
		body := "http_filters:\n  - name: envoy.filters.http.local_ratelimit\n    typed_config:\n" + indent(envoyFilter+tt.body, "      ")
		r, err := parse(t, "envoy.yaml", "envoy", body, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		var got []string
		for _, f := range r.Found {
			got = append(got, f.Spec())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: found %v, want %v", tt.body, got, tt.want)
		}
		if w := warnings(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
			t.Errorf("%s: warnings %q, want one with %q", tt.body, w, tt.warning)
		}
	}
	// JSON is YAML; the network filter and the global filter are named, not read.
	r, err := parse(t, "envoy.json", "", `{"filters": [{"typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit"}},
 {"typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit", "domain": "x"}}]}`, nil)
	if err != nil || len(r.Found) != 0 || !strings.Contains(warnings(r), "envoy.json:1: the network local_ratelimit filter limits connections") ||
		!strings.Contains(warnings(r), "envoy.json:2: the global ratelimit filter asks the rate limit service") {
		t.Errorf("JSON: %v %v %s", summary(r), err, warnings(r))
	}
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range lines {
		lines[i] = by + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestYAMLFormatErrorsNameTheLine(t *testing.T) {
	filter := "x:\n" + indent(envoyFilter+envoyOn, "  ")
	tests := []struct{ name, format, body, want string }{
		{"envoy.yaml", "envoy", filter + "  token_bucket: {fill_interval: 1s}\n", "envoy.yaml:6: token_bucket.max_tokens: is required and must be above 0"},
		{"envoy.yaml", "envoy", filter + "  token_bucket: {max_tokens: many, fill_interval: 1s}\n", `envoy.yaml:6: max_tokens: want a whole number, got "many"`},
		{"envoy.yaml", "envoy", filter + "  token_bucket: {max_tokens: 5, fill_interval: 500ms}\n", `envoy.yaml:6: token_bucket.fill_interval: want seconds as Envoy writes them ("1s", "0.25s"), got "500ms"`},
		{"envoy.yaml", "envoy", filter + "  token_bucket: {max_tokens: 5, fill_interval: 0.01s}\n", "envoy.yaml:6: token_bucket.fill_interval: Envoy refuses a fill interval under 50ms, got 0.01s"},
		{"envoy.yaml", "envoy", filter + "  token_bucket: {max_tokens: 5}\n", "envoy.yaml:6: token_bucket.fill_interval: is required"},
		{"envoy.yaml", "envoy", filter + "  token_bucket: {max_tokens: 5, fill_interval: 1s, tokens_per_fill: 0}\n", "envoy.yaml:6: token_bucket.tokens_per_fill: must be above 0"},
		{"envoy.yaml", "envoy", "a: [1, 2\nb: 3\n", "envoy.yaml:2:"},
		{"envoy.yaml", "envoy", "a: 1\na: 2\n", `envoy.yaml:2:1: YAML syntax error: mapping key "a" already defined`},
		{"envoy.yaml", "envoy", "a: &x {b: 1}\nc: *x\n", "envoy.yaml:2:4: YAML aliases (*name) are not read"},
		{"kong.yml", "kong", "plugins:\n  - name: rate-limiting\n    config: {}\n", "kong.yml:3: config: needs at least one of second, minute, hour, day, month, year"},
		{"kong.yml", "kong", "plugins:\n  - name: rate-limiting\n", "kong.yml:2: config: the rate-limiting plugin needs a config"},
		{"kong.yml", "kong", "plugins:\n  - name: rate-limiting\n    config:\n      minute: 100\n      hour: 50\n", "kong.yml:5: config.hour: the limit for hour (50) cannot be lower than the limit for minute (100)"},
		{"kong.yml", "kong", "plugins:\n  - name: rate-limiting\n    config:\n      minute: -1\n", "kong.yml:4: config.minute: must be above 0 and at most 1000000000000000, got -1"},
		{"kong.yml", "kong", "plugins:\n  - name: rate-limiting\n    config:\n      minute: \"10\"\n", `kong.yml:4: minute: want a number, got "10"`},
		{"kong.yml", "kong", "plugins:\n  - name: rate-limiting\n    config:\n      minute: 10\n      limit_by: planet\n", `kong.yml:5: config.limit_by: want consumer, credential, ip, service, header or path, got "planet"`},
		{"kong.yml", "kong", "plugins:\n  - name: rate-limiting\n    config:\n      minute: 10\n      limit_by: header\n", "kong.yml:4: config.header_name: limit_by: header needs a header_name"},
		{"kong.yml", "kong", "plugins:\n  - name: rate-limiting\n    config:\n      minute: 10\n      policy: memcached\n", `kong.yml:5: config.policy: want local, cluster or redis, got "memcached"`},
		{"traefik.yml", "traefik", "http:\n  middlewares:\n    a:\n      rateLimit:\n        average: 10\n        period: soon\n", `traefik.yml:6: period: want a duration (10s, 1m) or whole seconds, got "soon"`},
		{"traefik.yml", "traefik", "http:\n  middlewares:\n    a:\n      rateLimit:\n        average: -3\n", "traefik.yml:5: average: must not be negative"},
		{"traefik.yml", "traefik", "http:\n  middlewares:\n    a:\n      rateLimit: 5\n", "traefik.yml:4: a.rateLimit: want a map of average, period, burst"},
		{"traefik.toml", "traefik", "[http.middlewares.a.rateLimit]\naverage = 10\nperiod = \"\"\"1m\"\"\"\n", "traefik.toml:3: TOML: multi-line strings are not read"},
		{"traefik.toml", "traefik", "[http]\nwhen = 1979-05-27\n", `traefik.toml:2: TOML: "1979-05-27" is not a value rlsim reads`},
		{"traefik.toml", "traefik", "a = 1\na = 2\n", "traefik.toml:2: TOML: a is given twice"},
		{"traefik.toml", "traefik", "a = \"open\n", "traefik.toml:1: TOML: a string is not closed on its line"},
		{"traefik.toml", "traefik", "[a\n", "traefik.toml:1: TOML: a table header must end with ]"},
		{"traefik.toml", "traefik", "a = 1 b = 2\n", `traefik.toml:1: TOML: unexpected 'b' after a value`},
		{"traefik.toml", "traefik", "a = 1\n[a.b]\n", "traefik.toml:2: TOML: a is already a value"},
	}
	for _, tt := range tests {
		_, err := parse(t, tt.name, tt.format, tt.body, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "/etc/x/"+tt.want) {
			t.Errorf("%s %q:\n error %v\n want /etc/x/%s…", tt.name, tt.body, err, tt.want)
		}
	}
}

func TestKongFixture(t *testing.T) {
	r, err := gateway.Read("testdata/kong/kong.yml", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"service orders | kong:second=5 minute=100 hour=1000 policy=local | user | kong.yml:9",
		"service orders, route orders-write | kong:minute=10 | api-key | kong.yml:21",
		"global | kong:minute=600 day=100000 policy=redis | ip | kong.yml:29",
	}
	if got := summary(r); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f := r.Found[1]; f.Status != 429 || f.KeySource != "limit_by: header (X-Api-Key)" || f.Promise != (gateway.Promise{Limit: 10, Window: time.Minute}) {
		t.Errorf("the route's limit: %+v", f)
	}
	want = []string{
		"kong.yml:15: rate-limiting at service orders counts per consumer, and per client address for a request without one; rlsim keys on user",
		"kong.yml:42: rate-limiting at consumer batch-job is disabled (enabled: false): skipped",
	}
	if got := warnings(r); got != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

func TestKongCases(t *testing.T) {
	tests := []struct{ config, spec, key, warning string }{
		{"second: 1.5", "kong:second=1.5", "user", "counts per consumer"},
		{"year: 10000000\n      month: 100000", "kong:month=100000 year=10000000", "user", "counts per consumer"},
		{"minute: 5\n      limit_by: credential", "kong:minute=5", "api-key", "counts per credential"},
		{"minute: 5\n      limit_by: path\n      path: /x", "kong:minute=5", "route", ""},
		{"minute: 5\n      limit_by: service", "kong:minute=5", "", "counts per service"},
		{"minute: 5\n      limit_by: header\n      header_name: X-Colour", "kong:minute=5", "", "X-Colour header, which is no identity"},
		{"minute: 5\n      limit_by: ip\n      policy: redis\n      sync_rate: 0.5", "kong:minute=5 policy=redis", "ip", "sync_rate 0.5"},
		{"minute: 5\n      limit_by: ip\n      colour: red", "kong:minute=5", "ip", "config.colour is not a field rlsim reads"},
	}
	for _, tt := range tests {
		body := "plugins:\n  - name: rate-limiting\n    config:\n      " + tt.config + "\n"
		r, err := parse(t, "kong.yml", "kong", body, nil)
		if err != nil || len(r.Found) != 1 {
			t.Errorf("%s: %v %v", tt.config, summary(r), err)
			continue
		}
		if f := r.Found[0]; f.Spec() != tt.spec || f.Key != tt.key {
			t.Errorf("%s: %s keyed %q, want %s keyed %q", tt.config, f.Spec(), f.Key, tt.spec, tt.key)
		}
		if w := warnings(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
			t.Errorf("%s: warnings %q, want one with %q", tt.config, w, tt.warning)
		}
	}
	r, err := parse(t, "kong.yml", "kong", "plugins:\n  - name: rate-limiting-advanced\n    config: {limit: [5]}\n  - name: response-ratelimiting\n    config: {limits: {}}\n  - name: rate-limiting\n    consumer: alice\n    route: {name: r1}\n    config: {minute: 3}\n", nil)
	if err != nil || !slices.Equal(summary(r), []string{"route r1, consumer alice | kong:minute=3 | user | kong.yml:6"}) ||
		!strings.Contains(warnings(r), "kong.yml:2: rate-limiting-advanced") || !strings.Contains(warnings(r), "kong.yml:4: response-ratelimiting") {
		t.Errorf("plugins: %v %v %s", summary(r), err, warnings(r))
	}
}

// The same middlewares in YAML and in TOML are the same limits.
func TestTraefikYAMLAndTOMLAgree(t *testing.T) {
	want := []string{
		"middleware per-ip (router web) | traefik:average=100 period=1m burst=50 | ip",
		"middleware behind-lb | traefik:average=5 | xff:2",
		"router api | traefik:average=100 period=1m burst=50 | ip",
		"router api | traefik:average=10 burst=20 | api-key",
	}
	for _, file := range []string{"testdata/traefik/dynamic.yml", "testdata/traefik/dynamic.toml"} {
		r, err := gateway.Read(file, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range r.Found {
			got = append(got, f.Location+" | "+f.Spec()+" | "+f.Key)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: found\n%s\nwant\n%s", file, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if g := r.Groups(); len(g) != 3 || !g[2].Layered() {
			t.Errorf("%s: groups %+v", file, g)
		}
	}
	r, err := gateway.Read("testdata/traefik/middleware-crd.yaml", "")
	if err != nil || !slices.Equal(summary(r), []string{"middleware api-ratelimit | traefik:average=50 period=10s burst=100 | ip | middleware-crd.yaml:9"}) {
		t.Errorf("CRD: %v %v", summary(r), err)
	}
}

func TestTraefikCases(t *testing.T) {
	tests := []struct{ rateLimit, spec, key, warning string }{
		{"{average: 6, period: 1m}", "traefik:average=6 period=1m", "ip", ""},
		{"{average: 6, period: 60}", "traefik:average=6 period=1m", "ip", ""},
		{"{average: 6, period: 0}", "traefik:average=6 period=1s", "ip", ""},
		{"{average: 6, burst: 0}", "traefik:average=6 burst=0", "ip", ""},
		{"{average: 6, sourceCriterion: {ipStrategy: {}}}", "traefik:average=6", "ip", ""},
		{"{average: 6, sourceCriterion: {ipStrategy: {depth: 1}}}", "traefik:average=6", "xff:1", ""},
		{"{average: 6, sourceCriterion: {ipStrategy: {ipv6Subnet: 64}}}", "traefik:average=6", "ipv6/64", ""},
		{"{average: 6, sourceCriterion: {ipStrategy: {excludedIPs: [10.0.0.1]}}}", "traefik:average=6", "", "excludedIPs"},
		{"{average: 6, sourceCriterion: {requestHost: true}}", "traefik:average=6", "", "keys on the request's host"},
		{"{average: 6, sourceCriterion: {requestHeaderName: X-User}}", "traefik:average=6", "user", "without the X-User header"},
		{"{average: 6, redis: {endpoints: [127.0.0.1:6379]}}", "traefik:average=6", "ip", "through Redis"},
		{"{average: 0}", "", "", "average is 0 or unset"},
		{"{burst: 5}", "", "", "average is 0 or unset"},
	}
	for _, tt := range tests {
		r, err := parse(t, "dynamic.yml", "traefik", "http:\n  middlewares:\n    m:\n      rateLimit: "+tt.rateLimit+"\n", nil)
		if err != nil {
			t.Errorf("%s: %v", tt.rateLimit, err)
			continue
		}
		switch {
		case tt.spec == "" && len(r.Found) != 0:
			t.Errorf("%s: found %v", tt.rateLimit, summary(r))
		case tt.spec != "" && (len(r.Found) != 1 || r.Found[0].Spec() != tt.spec || r.Found[0].Key != tt.key):
			t.Errorf("%s: found %v, want %s keyed %q", tt.rateLimit, summary(r), tt.spec, tt.key)
		}
		if w := warnings(r); (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
			t.Errorf("%s: warnings %q, want one with %q", tt.rateLimit, w, tt.warning)
		}
	}
}

func TestTOMLReadsWhatTraefikWrites(t *testing.T) {
	conf := `# comment
title = "x" # trailing
[http.middlewares."quoted.name".rateLimit]
  average = 1_000
  period = '10s'
  burst = +7
  labels = [ "a", 'b',
    "c\"d\u00e9", # a comment inside
  ]
  [http.middlewares."quoted.name".rateLimit.sourceCriterion]
    ipStrategy.depth = 3
[[http.services.app.loadBalancer.servers]]
  url = "http://a"
[[http.services.app.loadBalancer.servers]]
  url = "http://b"
`
	r, err := parse(t, "dynamic.toml", "", conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(r); !slices.Equal(got, []string{"middleware quoted.name | traefik:average=1000 period=10s burst=7 | xff:3 | dynamic.toml:3"}) {
		t.Errorf("found %v", got)
	}
}

// Kong refuses once a window's count reaches its limit, so a fractional limit admits its
// ceiling: 1.5 a second is 2.
func TestKongFractionalLimitPromisesItsCeiling(t *testing.T) {
	r, err := parse(t, "kong.yml", "kong", "plugins:\n  - name: rate-limiting\n    config: {second: 1.5, minute: 60}\n", nil)
	if err != nil || len(r.Found) != 1 || r.Found[0].Promise != (gateway.Promise{Limit: 2, Window: time.Second}) {
		t.Errorf("%v %v %+v", summary(r), err, r.Found)
	}
}
