package gateway

import (
	"bytes"
	"math"
	"strings"
	"time"
)

func init() {
	Register(Format{
		Name:    "kong",
		Summary: "Kong declarative configuration (kong.yml): the rate-limiting plugins, global or on services, routes and consumers",
		Sniff:   sniffKong,
		Parse:   parseKong,
	})
}

func sniffKong(name string, data []byte) int {
	score := 0
	if isYAMLName(name) || strings.HasSuffix(name, ".json") {
		score++
	}
	if strings.HasPrefix(name, "kong") {
		score++
	}
	if bytes.Contains(data, []byte("_format_version")) {
		score += 3
	}
	if bytes.Contains(data, []byte("rate-limiting")) {
		score += 2
	}
	return score
}

// kongPeriods are the rate-limiting plugin's limits, shortest first, as its schema and
// the model's spec write them.
var kongPeriods = []struct {
	name   string
	window time.Duration
}{
	{"second", time.Second}, {"minute", time.Minute}, {"hour", time.Hour},
	{"day", 24 * time.Hour}, {"month", 30 * 24 * time.Hour}, {"year", 365 * 24 * time.Hour},
}

// kongMaxLimit bounds a window's limit, so that it stays a whole number of requests.
const kongMaxLimit = 1e15

// kongConfigFields are the rate-limiting plugin's configuration fields (Kong 3.9) that
// do not change what it decides, or that the warnings below name.
var kongConfigFields = map[string]bool{
	"policy": true, "limit_by": true, "header_name": true, "path": true, "sync_rate": true,
	"fault_tolerant": true, "hide_client_headers": true, "error_code": true, "error_message": true,
	"redis": true, "redis_host": true, "redis_port": true, "redis_password": true, "redis_username": true,
	"redis_database": true, "redis_timeout": true, "redis_ssl": true, "redis_ssl_verify": true,
	"redis_server_name": true,
}

// kongEntities are the lists of a declarative config whose items can hold plugins, and
// the word that names one.
var kongEntities = map[string]string{"services": "service", "routes": "route", "consumers": "consumer", "consumer_groups": "consumer group"}

// parseKong reads the rate-limiting plugins of a Kong declarative configuration (Kong
// 3.x, the plugin's schema of 3.9): top-level plugins, and those nested under services,
// routes and consumers. Only one rate-limiting plugin runs for a request (the most
// specific), so each is a location of its own.
func parseKong(src *Source) (*Result, error) {
	docs, err := yamlDocs(src.Path, src.Data)
	if err != nil {
		return nil, err
	}
	r := treeReader{src: src, col: &collector{}}
	for _, doc := range docs {
		err := walkTree(doc, nil, func(m *tree, path []treeFrame) error {
			if len(path) == 0 || path[len(path)-1].key != "plugins" || path[len(path)-1].index < 0 {
				return nil
			}
			name, _ := m.get("name").scalar()
			switch name {
			case "rate-limiting":
				return r.kongPlugin(m, path)
			case "rate-limiting-advanced":
				r.col.warn(r.at(m), "rate-limiting-advanced (Kong Enterprise, sliding windows) is not modelled: skipped")
			case "response-ratelimiting":
				r.col.warn(r.at(m), "response-ratelimiting counts what the upstream's response headers say, which rlsim does not model: skipped")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return r.col.result(), nil
}

// kongScope names where a plugin applies: the entities it is nested under and those it
// names itself.
func kongScope(m *tree, path []treeFrame) string {
	var parts []string
	for _, f := range path {
		word, ok := kongEntities[f.key]
		if !ok || f.index < 0 {
			continue
		}
		parts = append(parts, word+" "+orIndex(kongName(f.node), f.index))
	}
	for _, field := range []string{"service", "route", "consumer"} {
		v := m.get(field)
		if v == nil {
			continue
		}
		name, ok := v.scalar()
		if !ok {
			name = kongName(v)
		}
		parts = append(parts, field+" "+name)
	}
	if len(parts) == 0 {
		return "global"
	}
	return strings.Join(parts, ", ")
}

func kongName(entity *tree) string {
	for _, k := range []string{"name", "username", "custom_id", "id"} {
		if v, ok := entity.get(k).scalar(); ok {
			return v
		}
	}
	return ""
}

func (r treeReader) kongPlugin(m *tree, path []treeFrame) error {
	where := kongScope(m, path)
	at := r.at(m)
	if v, _ := m.get("enabled").scalar(); v == "false" {
		r.col.warn(at, "rate-limiting at %s is disabled (enabled: false): skipped", where)
		return nil
	}
	conf := m.get("config")
	if conf == nil || conf.kind != treeMap {
		return r.fail(m, "config", "the rate-limiting plugin needs a config with at least one of second, minute, hour, day, month, year")
	}
	var params []Param
	var promise Promise
	var prev float64
	var prevName string
	for _, p := range kongPeriods {
		v, ok, err := r.number(conf, p.name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if v <= 0 || v > kongMaxLimit {
			return r.fail(conf.get(p.name), "config."+p.name, "must be above 0 and at most %s, got %s", formatNumber(kongMaxLimit), formatNumber(v))
		}
		if prevName != "" && v < prev {
			return r.fail(conf.get(p.name), "config."+p.name, "the limit for %s (%s) cannot be lower than the limit for %s (%s)", p.name, formatNumber(v), prevName, formatNumber(prev))
		}
		if prevName == "" {
			// Kong refuses once the count reaches the limit, so 2.5 admits 3.
			promise = Promise{Limit: int64(math.Ceil(v)), Window: p.window}
		}
		prev, prevName = v, p.name
		params = append(params, Param{Name: p.name, Value: formatNumber(v)})
	}
	if len(params) == 0 {
		return r.fail(conf, "config", "needs at least one of second, minute, hour, day, month, year")
	}
	for _, pr := range conf.pairs {
		isPeriod := false
		for _, p := range kongPeriods {
			isPeriod = isPeriod || p.name == pr.key
		}
		if !isPeriod && !kongConfigFields[pr.key] {
			r.col.warn(r.at(pr.value), "rate-limiting config.%s is not a field rlsim reads: skipped", pr.key)
		}
	}
	policy, hasPolicy, err := r.text(conf, "policy")
	if err != nil {
		return err
	}
	switch policy {
	case "", "local", "cluster", "redis":
	default:
		return r.fail(conf.get("policy"), "config.policy", "want local, cluster or redis, got %q", policy)
	}
	if hasPolicy {
		params = append(params, Param{Name: "policy", Value: policy})
	}
	if v, ok, _ := r.number(conf, "sync_rate"); ok && v != -1 {
		r.col.warn(r.at(conf.get("sync_rate")), "sync_rate %s: counters reach the shared store every %ss, which the spec does not write", formatNumber(v), formatNumber(v))
	}
	status := 0
	if n, ok, err := r.integer(conf, "error_code"); err != nil {
		return err
	} else if ok {
		status = int(n)
	}
	key, source, err := r.kongKey(conf, where)
	if err != nil {
		return err
	}
	r.col.found = append(r.col.found, Found{
		Product:   "kong",
		Params:    params,
		Key:       key,
		KeySource: source,
		Name:      "rate-limiting",
		Location:  where,
		Status:    status,
		Promise:   promise,
		At:        at,
	})
	return nil
}

// kongKey maps the plugin's limit_by onto rlsim's key.
func (r treeReader) kongKey(conf *tree, where string) (key, source string, err error) {
	by, _, err := r.text(conf, "limit_by")
	if err != nil {
		return "", "", err
	}
	if by == "" {
		by = "consumer"
	}
	source = "limit_by: " + by
	at := r.at(conf)
	if v := conf.get("limit_by"); v != nil {
		at = r.at(v)
	}
	switch by {
	case "consumer", "credential":
		k := map[string]string{"consumer": "user", "credential": "api-key"}[by]
		r.col.warn(at, "rate-limiting at %s counts per %s, and per client address for a request without one; rlsim keys on %s", where, by, k)
		return k, source, nil
	case "ip":
		return "ip", source, nil
	case "header":
		h, ok, err := r.text(conf, "header_name")
		if err != nil {
			return "", "", err
		}
		if !ok || h == "" {
			return "", "", r.fail(conf, "config.header_name", "limit_by: header needs a header_name")
		}
		source += " (" + h + ")"
		if k, ok := headerKey(h); ok {
			return k, source, nil
		}
		r.col.warn(at, "rate-limiting at %s counts per %s header, which is no identity rlsim's requests carry (it knows %s): no key", where, h, headerKeyList)
		return "", source, nil
	case "path":
		return "route", source, nil
	case "service":
		r.col.warn(at, "rate-limiting at %s counts per service: one counter every client shares; rlsim keys limits per client, so the limit has no key here", where)
		return "", source, nil
	}
	return "", "", r.fail(conf.get("limit_by"), "config.limit_by", "want consumer, credential, ip, service, header or path, got %q", by)
}
