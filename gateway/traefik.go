package gateway

import (
	"bytes"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func init() {
	Register(Format{
		Name:    "traefik",
		Summary: "Traefik dynamic configuration (YAML, TOML, or Kubernetes Middleware resources): the rateLimit middlewares",
		Sniff:   sniffTraefik,
		Parse:   parseTraefik,
	})
}

func sniffTraefik(name string, data []byte) int {
	score := 0
	switch {
	case strings.HasSuffix(name, ".toml"):
		score += 2
	case isYAMLName(name):
		score++
	}
	if strings.HasPrefix(name, "traefik") {
		score++
	}
	if bytes.Contains(data, []byte("rateLimit")) && (bytes.Contains(data, []byte("middlewares")) || bytes.Contains(data, []byte("kind: Middleware"))) {
		score += 4
	}
	return score
}

// traefikMiddleware is one rateLimit middleware and where it is.
type traefikMiddleware struct {
	name string
	rl   *tree
}

// parseTraefik reads the rateLimit middlewares of Traefik's dynamic configuration (v2.11
// and v3): http.middlewares.NAME.rateLimit in a file provider's YAML or TOML, or the
// spec.rateLimit of Kubernetes Middleware resources. A router that chains several
// rateLimit middlewares is one location where every one must admit; any other
// middleware is a location of its own.
func parseTraefik(src *Source) (*Result, error) {
	var docs []*tree
	if strings.HasSuffix(src.Name, ".toml") {
		doc, err := tomlDoc(src.Path, src.Data)
		if err != nil {
			return nil, err
		}
		docs = []*tree{doc}
	} else {
		var err error
		if docs, err = yamlDocs(src.Path, src.Data); err != nil {
			return nil, err
		}
	}
	r := treeReader{src: src, col: &collector{}}
	var mws []traefikMiddleware
	routers := map[string][]string{} // router → its middlewares, in order
	for _, doc := range docs {
		if kind, _ := doc.get("kind").scalar(); kind == "Middleware" {
			if rl := doc.path("spec", "rateLimit"); rl != nil {
				name, _ := doc.path("metadata", "name").scalar()
				mws = append(mws, traefikMiddleware{name: name, rl: rl})
			}
			continue
		}
		for _, p := range doc.path("http", "middlewares").pairsOrNil() {
			if rl := p.value.get("rateLimit"); rl != nil {
				mws = append(mws, traefikMiddleware{name: p.key, rl: rl})
			}
		}
		for _, p := range doc.path("http", "routers").pairsOrNil() {
			for _, m := range p.value.get("middlewares").itemsOrNil() {
				if s, ok := m.scalar(); ok {
					name, _, _ := strings.Cut(s, "@") // "name@file": the provider's suffix
					routers[p.key] = append(routers[p.key], name)
				}
			}
		}
	}
	byName := map[string]*Found{}
	var order []*Found
	for _, mw := range mws {
		f, err := r.traefikLimit(mw)
		if err != nil {
			return nil, err
		}
		if f != nil {
			byName[mw.name] = f
			order = append(order, f)
		}
	}
	// Routers that chain several rateLimit middlewares, and who uses the rest.
	names := make([]string, 0, len(routers))
	for n := range routers {
		names = append(names, n)
	}
	sort.Strings(names)
	usedBy := map[string][]string{}
	chained := map[string]bool{}
	var chains []Found
	for _, router := range names {
		var limits []string
		for _, m := range routers[router] {
			if byName[m] != nil && !slices.Contains(limits, m) {
				limits = append(limits, m)
			}
		}
		if len(limits) < 2 {
			for _, m := range limits {
				usedBy[m] = append(usedBy[m], router)
			}
			continue
		}
		for _, m := range limits {
			f := *byName[m]
			f.Location = "router " + router
			chains = append(chains, f)
			chained[m] = true
		}
	}
	for _, f := range order {
		users := usedBy[f.Name]
		if chained[f.Name] && len(users) == 0 {
			continue // every router that uses it chains it with another
		}
		if len(users) > 0 {
			f.Location += " (router " + strings.Join(users, ", ") + ")"
		}
		r.col.found = append(r.col.found, *f)
	}
	r.col.found = append(r.col.found, chains...)
	return r.col.result(), nil
}

func (t *tree) pairsOrNil() []treePair {
	if t == nil || t.kind != treeMap {
		return nil
	}
	return t.pairs
}

func (t *tree) itemsOrNil() []*tree {
	if t == nil || t.kind != treeList {
		return nil
	}
	return t.items
}

// traefikPeriod reads a Traefik duration: a whole number of seconds, or a Go duration.
func traefikPeriod(s string) (time.Duration, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > int64(1<<62)/int64(time.Second) {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d >= 0
}

func (r treeReader) traefikLimit(mw traefikMiddleware) (*Found, error) {
	rl := mw.rl
	at := r.at(rl)
	if rl.kind != treeMap {
		return nil, r.fail(rl, mw.name+".rateLimit", "want a map of average, period, burst, got %s", describe(rl))
	}
	average, _, err := r.integer(rl, "average")
	if err != nil {
		return nil, err
	}
	if average < 0 {
		return nil, r.fail(rl.get("average"), "average", "must not be negative")
	}
	if average == 0 {
		r.col.warn(at, "middleware %s: average is 0 or unset, so Traefik limits nothing: skipped", mw.name)
		return nil, nil
	}
	params := []Param{{Name: "average", Value: strconv.FormatInt(average, 10)}}
	period := time.Second
	if text, ok, err := r.text(rl, "period"); err != nil {
		return nil, err
	} else if ok {
		d, valid := traefikPeriod(text)
		if !valid {
			return nil, r.fail(rl.get("period"), "period", "want a duration (10s, 1m) or whole seconds, got %q", text)
		}
		if d > 0 {
			period = d
		}
		params = append(params, Param{Name: "period", Value: formatDuration(period)})
	}
	burst, burstSet, err := r.integer(rl, "burst")
	if err != nil {
		return nil, err
	}
	if burstSet {
		params = append(params, Param{Name: "burst", Value: strconv.FormatInt(burst, 10)})
	}
	if burst < 1 {
		burst = 1 // Traefik's bucket holds at least one token
	}
	if rl.get("redis") != nil {
		r.col.warn(r.at(rl.get("redis")), "middleware %s shares its buckets through Redis across Traefik instances; the spec models one instance", mw.name)
	}
	key, source := r.traefikKey(mw.name, rl.get("sourceCriterion"))
	return &Found{
		Product:   "traefik",
		Params:    params,
		Key:       key,
		KeySource: source,
		Name:      mw.name,
		Location:  "middleware " + mw.name,
		Promise:   Promise{Limit: average, Window: period, Burst: burst},
		At:        at,
	}, nil
}

// traefikKey maps a sourceCriterion onto rlsim's key; without one Traefik keys on the
// peer address.
func (r treeReader) traefikKey(name string, sc *tree) (key, source string) {
	if sc == nil || len(sc.pairsOrNil()) == 0 {
		return "ip", "the client address"
	}
	at := r.at(sc)
	if h, ok := sc.get("requestHeaderName").scalar(); ok {
		source = "requestHeaderName: " + h
		if k, ok := headerKey(h); ok {
			r.col.warn(at, "middleware %s: requests without the %s header share one bucket; rlsim limits each by its %s", name, h, k)
			return k, source
		}
		r.col.warn(at, "middleware %s keys on the %s header, which is no identity rlsim's requests carry (it knows %s): no key", name, h, headerKeyList)
		return "", source
	}
	if v, _ := sc.get("requestHost").scalar(); v == "true" {
		r.col.warn(at, "middleware %s keys on the request's host: one bucket per host that every client shares; rlsim keys per client, so the limit has no key here", name)
		return "", "requestHost"
	}
	ips := sc.get("ipStrategy")
	if ips == nil {
		return "ip", "the client address"
	}
	depth, _, err := r.integer(ips, "depth")
	if err == nil && depth > 0 && depth <= 64 {
		return "xff:" + strconv.FormatInt(depth, 10), "ipStrategy.depth: " + strconv.FormatInt(depth, 10)
	}
	if ex := ips.get("excludedIPs"); ex != nil && len(ex.itemsOrNil()) > 0 {
		r.col.warn(r.at(ex), "middleware %s: ipStrategy.excludedIPs takes the first X-Forwarded-For address from the right outside the list, which depends on how many proxies are listed; no key (--key xff:K for K)", name)
		return "", "ipStrategy.excludedIPs"
	}
	if bits, _, err := r.integer(ips, "ipv6Subnet"); err == nil && bits > 0 && bits <= 128 {
		return "ipv6/" + strconv.FormatInt(bits, 10), "ipStrategy.ipv6Subnet: " + strconv.FormatInt(bits, 10)
	}
	return "ip", "the client address"
}
