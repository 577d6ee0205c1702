package gateway

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func init() {
	Register(Format{
		Name:    "envoy",
		Summary: "Envoy YAML or JSON: the local_ratelimit HTTP filter's token_bucket, on a listener or per route",
		Sniff:   sniffEnvoy,
		Parse:   parseEnvoy,
	})
}

func sniffEnvoy(name string, data []byte) int {
	score := 0
	if isYAMLName(name) || strings.HasSuffix(name, ".json") {
		score++
	}
	if bytes.Contains(data, []byte("local_ratelimit")) {
		score += 3
	}
	if bytes.Contains(data, []byte("static_resources")) || bytes.Contains(data, []byte("type.googleapis.com/envoy")) {
		score += 2
	}
	return score
}

func isYAMLName(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

const (
	envoyHTTPLocal    = "envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
	envoyNetworkLocal = "envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit"
	envoyGlobal       = "envoy.extensions.filters.http.ratelimit.v3.RateLimit"
)

// treeFrame is one step down a tree: the key (or list index) and the node it leads from.
type treeFrame struct {
	key    string
	index  int // in a list; -1 in a map
	parent *tree
	node   *tree
}

// walkTree calls visit on every map of t, outermost first, with the steps that lead to
// it.
func walkTree(t *tree, path []treeFrame, visit func(m *tree, path []treeFrame) error) error {
	switch t.kind {
	case treeMap:
		if err := visit(t, path); err != nil {
			return err
		}
		for _, p := range t.pairs {
			if err := walkTree(p.value, append(path, treeFrame{key: p.key, index: -1, parent: t, node: p.value}), visit); err != nil {
				return err
			}
		}
	case treeList:
		key := ""
		if len(path) > 0 {
			key = path[len(path)-1].key
		}
		for i, it := range t.items {
			if err := walkTree(it, append(path, treeFrame{key: key, index: i, parent: t, node: it}), visit); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseEnvoy reads every local_ratelimit HTTP filter configuration of an Envoy
// configuration (a bootstrap, or any part of one: a listener, a route configuration):
// the filter's own, which every request through the listener shares, and each route's
// typed_per_filter_config, which replaces it for that route.
func parseEnvoy(src *Source) (*Result, error) {
	docs, err := yamlDocs(src.Path, src.Data)
	if err != nil {
		return nil, err
	}
	r := treeReader{src: src, col: &collector{}}
	for _, doc := range docs {
		err := walkTree(doc, nil, func(m *tree, path []treeFrame) error {
			typ, _ := m.get("@type").scalar()
			switch {
			case strings.HasSuffix(typ, envoyHTTPLocal):
				return r.envoyLocal(m, path)
			case strings.HasSuffix(typ, envoyNetworkLocal):
				r.col.warn(r.at(m), "the network local_ratelimit filter limits connections, which rlsim does not model: skipped")
			case strings.HasSuffix(typ, envoyGlobal):
				r.col.warn(r.at(m), "the global ratelimit filter asks the rate limit service, whose limits are in that service's own configuration (rlsim's envoy-ratelimit model): skipped")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return r.col.result(), nil
}

// envoyLocation names where a filter configuration sits: its listener, and for a
// per-route one its virtual host and route.
func envoyLocation(path []treeFrame) (where string, perRoute bool) {
	var parts []string
	for _, f := range path {
		if f.index < 0 {
			if f.key == "typed_per_filter_config" {
				perRoute = true
			}
			continue
		}
		name, _ := f.node.get("name").scalar()
		switch f.key {
		case "listeners":
			parts = append(parts, "listener "+orIndex(name, f.index))
		case "virtual_hosts":
			parts = append(parts, "virtual host "+orIndex(name, f.index))
		case "routes":
			parts = append(parts, "route "+orIndex(routeMatch(f.node), f.index))
		}
	}
	if len(parts) == 0 {
		return "the filter", perRoute
	}
	return strings.Join(parts, ", "), perRoute
}

func orIndex(name string, i int) string {
	if name != "" {
		return name
	}
	return "#" + strconv.Itoa(i+1)
}

func routeMatch(route *tree) string {
	m := route.get("match")
	for _, k := range []string{"prefix", "path", "path_separated_prefix"} {
		if v, ok := m.get(k).scalar(); ok {
			return v
		}
	}
	if v, ok := m.path("safe_regex", "regex").scalar(); ok {
		return "~ " + v
	}
	name, _ := route.get("name").scalar()
	return name
}

var envoyDurationRE = regexp.MustCompile(`^(\d+)(?:\.(\d{1,9}))?s$`)

// envoyDuration reads a protobuf Duration as Envoy's YAML writes one: seconds, with up to
// nine decimals, and an "s".
func envoyDuration(s string) (time.Duration, bool) {
	m := envoyDurationRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	sec, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || sec > 1<<32 {
		return 0, false
	}
	frac := m[2] + strings.Repeat("0", 9-len(m[2]))
	nanos, _ := strconv.ParseInt(frac, 10, 64)
	return time.Duration(sec)*time.Second + time.Duration(nanos), true
}

// envoyPercent reads a RuntimeFractionalPercent's default value, as a fraction; absent
// is 0, Envoy's default.
func (r treeReader) envoyPercent(m *tree, field string) (float64, error) {
	v := m.get(field)
	if v == nil {
		return 0, nil
	}
	dv := v.get("default_value")
	n, _, err := r.integer(dv, "numerator")
	if err != nil {
		return 0, err
	}
	den := 100.0
	switch d, _ := dv.get("denominator").scalar(); d {
	case "", "HUNDRED":
	case "TEN_THOUSAND":
		den = 10000
	case "MILLION":
		den = 1e6
	default:
		return 0, r.fail(dv.get("denominator"), field+".default_value.denominator", "want HUNDRED, TEN_THOUSAND or MILLION, got %q", d)
	}
	return float64(n) / den, nil
}

func (r treeReader) envoyLocal(m *tree, path []treeFrame) error {
	where, perRoute := envoyLocation(path)
	tb := m.get("token_bucket")
	if tb == nil {
		return nil // a filter whose buckets are all per route: each is read where it is
	}
	at := r.at(tb)
	maxTokens, ok, err := r.integer(tb, "max_tokens")
	switch {
	case err != nil:
		return err
	case !ok || maxTokens <= 0:
		return r.fail(tb, "token_bucket.max_tokens", "is required and must be above 0")
	}
	perFill, perFillSet, err := r.integer(tb, "tokens_per_fill")
	if v := tb.get("tokens_per_fill"); err != nil && v.kind == treeMap {
		perFill, perFillSet, err = r.integer(v, "value") // the wrapper's own form
	}
	if err != nil {
		return err
	}
	if !perFillSet {
		perFill = 1
	}
	if perFill <= 0 {
		return r.fail(tb, "token_bucket.tokens_per_fill", "must be above 0")
	}
	fill, ok, err := r.text(tb, "fill_interval")
	if err != nil {
		return err
	}
	interval, valid := envoyDuration(fill)
	switch {
	case !ok:
		return r.fail(tb, "token_bucket.fill_interval", "is required")
	case !valid:
		return r.fail(tb.get("fill_interval"), "token_bucket.fill_interval", "want seconds as Envoy writes them (\"1s\", \"0.25s\"), got %q", fill)
	case interval < 50*time.Millisecond:
		return r.fail(tb.get("fill_interval"), "token_bucket.fill_interval", "Envoy refuses a fill interval under 50ms, got %s", fill)
	}
	enabled, err := r.envoyPercent(m, "filter_enabled")
	if err != nil {
		return err
	}
	enforced, err := r.envoyPercent(m, "filter_enforced")
	if err != nil {
		return err
	}
	switch {
	case enabled == 0:
		r.col.warn(r.at(m), "local_ratelimit at %s: filter_enabled is not set or 0%%, and Envoy's default is 0%%, so this filter limits nothing: skipped", where)
		return nil
	case enforced == 0:
		r.col.warn(r.at(m), "local_ratelimit at %s: filter_enforced is not set or 0%%, so the filter counts but refuses nothing: skipped", where)
		return nil
	case enabled < 1 || enforced < 1:
		r.col.warn(r.at(m), "local_ratelimit at %s is enabled for %g%% and enforced for %g%% of requests; the spec enforces every one", where, enabled*100, enforced*100)
	}
	if d := m.get("descriptors"); d != nil && len(d.items) > 0 {
		r.col.warn(r.at(d), "%d descriptors with buckets of their own are not modelled: the spec is the default token_bucket", len(d.items))
	}
	if v, _ := m.get("local_rate_limit_per_downstream_connection").scalar(); v == "true" {
		r.col.warn(r.at(m), "local_rate_limit_per_downstream_connection: one bucket per connection, not per filter; the spec models one bucket")
	}
	status := 0
	if code, ok := m.path("status", "code").scalar(); ok {
		if n, err := strconv.Atoi(code); err == nil {
			status = n
		} else if n, ok := envoyStatusNames[code]; ok {
			status = n
		}
	}
	params := []Param{{Name: "max_tokens", Value: strconv.FormatInt(maxTokens, 10)}}
	if perFillSet {
		params = append(params, Param{Name: "tokens_per_fill", Value: strconv.FormatInt(perFill, 10)})
	}
	params = append(params, Param{Name: "fill_interval", Value: formatDuration(interval)})
	f := Found{
		Product:  "envoy-local",
		Params:   params,
		Name:     "local_ratelimit",
		Location: where,
		Status:   status,
		Promise:  Promise{Limit: perFill, Window: interval, Burst: maxTokens},
		At:       at,
	}
	if name, ok := m.get("stat_prefix").scalar(); ok {
		f.Name = name
	}
	if perRoute {
		f.Key, f.KeySource = "route", "the route's own bucket"
	} else {
		f.KeySource = "one bucket for every request"
		r.col.warn(at, "local_ratelimit at %s: one bucket that every request through the filter shares, in each Envoy process; rlsim keys limits per client, so the limit has no key here", where)
	}
	r.col.found = append(r.col.found, f)
	return nil
}

// envoyStatusNames are the StatusCode names a local_ratelimit status may give.
var envoyStatusNames = map[string]int{"TooManyRequests": 429, "ServiceUnavailable": 503, "Forbidden": 403}

// describeFrames writes a tree path as a dotted field path, for messages.
func describeFrames(path []treeFrame) string {
	var b strings.Builder
	for _, f := range path {
		if f.index >= 0 {
			fmt.Fprintf(&b, "[%d]", f.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	return b.String()
}
