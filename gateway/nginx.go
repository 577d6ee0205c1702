package gateway

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func init() {
	Register(Format{
		Name:    "nginx",
		Summary: "nginx.conf and the files it includes: limit_req_zone, limit_req, limit_req_status",
		Sniff:   sniffNginx,
		Parse:   parseNginx,
	})
}

var ngxBlockRE = regexp.MustCompile(`(?m)^\s*(http|server|events|location\s[^{]*)\s*\{`)

func sniffNginx(name string, data []byte) int {
	if notLineBased(name) {
		return 0
	}
	score := 0
	if strings.HasSuffix(name, ".conf") || strings.HasPrefix(name, "nginx") {
		score++
	}
	if bytes.Contains(data, []byte("limit_req")) {
		score += 3
	}
	if ngxBlockRE.Match(data) {
		score += 2
	}
	return score
}

// ngxZone is one limit_req_zone: the key a zone counts on and its rate.
type ngxZone struct {
	name, key string
	rate      string // as the spec writes it: "10r/s", "30r/m"
	limit     int64
	window    time.Duration
	at        Place
	used      bool
}

// ngxMap is a map block: the values its target variable takes.
type ngxMap struct {
	values []string // "" among them when a request can get an empty value
	at     Place
}

// ngxScope is what a block of http, server or location sets and its inner blocks
// inherit.
type ngxScope struct {
	kind      string // http, server or location
	where     string
	status    int
	realIP    *ngxDirective // real_ip_header in effect
	recursive bool
	dryRun    *ngxDirective // limit_req_dry_run on in effect
}

type nginxParser struct {
	col   *collector
	zones map[string]*ngxZone
	order []*ngxZone
	maps  map[string]*ngxMap
}

// parseNginx reads an nginx configuration by nginx's rules for limit_req (the module
// ngx_http_limit_req_module, 1.22–1.27): zones are defined at the http level, limit_req
// applies in http, server and location, and a block inherits the limit_req lines of the
// block around it only when it has none of its own. A file without an http block is
// read as the contents of one (a file that nginx.conf includes inside http).
func parseNginx(src *Source) (*Result, error) {
	col := &collector{}
	r := &ngxReader{files: src.Files, confDir: filepath.Dir(src.Path), col: col}
	tree, err := r.readFile(src.Path, src.Name, src.Data, 0)
	if err != nil {
		return nil, err
	}
	p := &nginxParser{col: col, zones: map[string]*ngxZone{}, maps: map[string]*ngxMap{}}
	// A file without an http block is a part of one: the contents of http, or of a
	// server when it holds locations but no server.
	top := ngxScope{kind: "http", where: "http"}
	switch {
	case hasDirective(tree, "http"):
		top.kind = "main"
	case !hasDirective(tree, "server") && hasDirective(tree, "location"):
		top = ngxScope{kind: "server", where: "server"}
	}
	if err := p.scan(tree, top.kind); err != nil {
		return nil, err
	}
	if top.kind != "main" {
		if err := p.walk(tree, top); err != nil {
			return nil, err
		}
	}
	for _, d := range tree {
		if d.name == "http" && d.hasBlock && top.kind == "main" {
			if err := p.walk(d.block, ngxScope{kind: "http", where: "http"}); err != nil {
				return nil, err
			}
		}
	}
	for _, z := range p.order {
		if !z.used {
			col.warn(z.at, "zone %s is defined, but no limit_req uses it", z.name)
		}
	}
	return col.result(), nil
}

func hasDirective(dirs []*ngxDirective, name string) bool {
	for _, d := range dirs {
		if d.name == name {
			return true
		}
	}
	return false
}

func ngxFail(d *ngxDirective, format string, args ...any) error {
	return &Error{File: d.path, Line: d.at.Line, Msg: fmt.Sprintf(format, args...)}
}

// ngxLimitContexts are where limit_req, limit_req_status and limit_req_dry_run may be.
var ngxLimitContexts = map[string]bool{"http": true, "server": true, "location": true}

// scan checks where the limit_req directives are and reads every zone and map, so that a
// limit_req may name a zone defined after it, as in nginx.
func (p *nginxParser) scan(dirs []*ngxDirective, ctx string) error {
	for _, d := range dirs {
		switch d.name {
		case "limit_req_zone":
			if ctx != "http" {
				return ngxFail(d, `"limit_req_zone" directive is not allowed here`)
			}
			if err := p.zone(d); err != nil {
				return err
			}
		case "limit_req", "limit_req_status", "limit_req_dry_run":
			if !ngxLimitContexts[ctx] {
				return ngxFail(d, "%q directive is not allowed here", d.name)
			}
		case "map":
			if ctx == "http" && d.hasBlock && len(d.args) == 2 {
				p.addMap(d)
			}
		}
		if !d.hasBlock {
			continue
		}
		switch d.name {
		case "http", "server", "location", "if", "limit_except":
			if err := p.scan(d.block, d.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// zone reads "limit_req_zone KEY zone=NAME:SIZE rate=Nr/s".
func (p *nginxParser) zone(d *ngxDirective) error {
	if len(d.args) != 3 {
		return ngxFail(d, `invalid number of arguments in "limit_req_zone" directive (want a key, zone=NAME:SIZE and rate=N r/s or r/m)`)
	}
	z := &ngxZone{key: d.args[0], at: d.at, rate: "1r/s", limit: 1, window: time.Second}
	rateSeen := false
	for _, a := range d.args[1:] {
		switch {
		case strings.HasPrefix(a, "zone="):
			name, size, ok := strings.Cut(a[len("zone="):], ":")
			if !ok || name == "" {
				return ngxFail(d, "invalid zone size %q (want zone=NAME:SIZE)", a)
			}
			n, ok := ngxSize(size)
			if !ok {
				return ngxFail(d, "invalid zone size %q", a)
			}
			if n < 32<<10 {
				return ngxFail(d, "zone %q is too small (nginx needs at least 32k)", a)
			}
			z.name = name
		case strings.HasPrefix(a, "rate="):
			v := a[len("rate="):]
			window, unit := time.Second, "r/s"
			switch {
			case strings.HasSuffix(v, "r/s"):
				v = strings.TrimSuffix(v, "r/s")
			case strings.HasSuffix(v, "r/m"):
				v, window, unit = strings.TrimSuffix(v, "r/m"), time.Minute, "r/m"
			default:
				p.col.warn(d.at, "%s has no unit; nginx reads it as %sr/s", a, v)
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || v[0] == '+' || n > ngxMaxCount {
				return ngxFail(d, "invalid rate %q (want rate=N r/s or r/m, N a whole number above 0)", a)
			}
			z.rate, z.limit, z.window, rateSeen = strconv.FormatInt(n, 10)+unit, n, window, true
		default:
			return ngxFail(d, "invalid parameter %q", a)
		}
	}
	switch {
	case z.name == "":
		return ngxFail(d, `"limit_req_zone" must have "zone" parameter`)
	case !rateSeen:
		return ngxFail(d, `"limit_req_zone" needs rate=N r/s or r/m`)
	}
	if prev := p.zones[z.name]; prev != nil {
		return ngxFail(d, "limit_req_zone %q is already bound to key %q at %s", z.name, prev.key, prev.at)
	}
	p.zones[z.name] = z
	p.order = append(p.order, z)
	return nil
}

// ngxMaxCount bounds a rate, burst or delay: nginx keeps them in thousandths of a
// request, which a larger number would overflow.
const ngxMaxCount = 1 << 40

// ngxSize reads a size as nginx writes one: a whole number of bytes, or of k or m.
func ngxSize(s string) (int64, bool) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult || (s != "" && s[0] == '+') {
		return 0, false
	}
	return n * mult, true
}

// addMap records the values a map block gives its target variable.
func (p *nginxParser) addMap(d *ngxDirective) {
	name, ok := ngxVariable(d.args[1])
	if !ok {
		return
	}
	m := &ngxMap{at: d.at}
	hasDefault := false
	for _, e := range d.block {
		switch {
		case e.name == "hostnames" || e.name == "volatile":
		case len(e.args) == 1:
			if e.name == "default" {
				hasDefault = true
			}
			m.values = append(m.values, e.args[0])
		}
	}
	if !hasDefault {
		m.values = append(m.values, "") // a map without a default gives the others ""
	}
	p.maps[name] = m
}

var ngxVarRE = regexp.MustCompile(`^\$(?:([A-Za-z0-9_]+)|\{([A-Za-z0-9_]+)\})$`)

// ngxVariable returns the name of the variable s is, when s is exactly one variable.
func ngxVariable(s string) (string, bool) {
	m := ngxVarRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1] + m[2], true
}

// walk reads one http, server or location block: what it sets, its limits when it has
// limit_req lines of its own, then its inner blocks.
func (p *nginxParser) walk(dirs []*ngxDirective, sc ngxScope) error {
	var own []*ngxDirective
	for _, d := range dirs {
		switch d.name {
		case "limit_req":
			own = append(own, d)
		case "limit_req_status":
			n, err := strconv.Atoi(firstArg(d))
			if len(d.args) != 1 || err != nil || n < 400 || n > 599 {
				return ngxFail(d, "limit_req_status: value must be between 400 and 599, got %q", strings.Join(d.args, " "))
			}
			sc.status = n
		case "limit_req_dry_run":
			switch firstArg(d) {
			case "on":
				sc.dryRun = d
			case "off":
				sc.dryRun = nil
			default:
				return ngxFail(d, `limit_req_dry_run: want "on" or "off", got %q`, strings.Join(d.args, " "))
			}
		case "real_ip_header":
			sc.realIP = d
		case "real_ip_recursive":
			sc.recursive = firstArg(d) == "on"
		case "limit_conn", "limit_conn_zone":
			p.col.warn(d.at, "%s limits concurrent connections, which rlsim does not model: skipped", d.name)
		case "limit_rate", "limit_rate_after":
			p.col.warn(d.at, "%s limits bandwidth, not requests: skipped", d.name)
		}
	}
	if len(own) > 0 {
		if err := p.emit(own, sc); err != nil {
			return err
		}
	}
	for _, d := range dirs {
		if !d.hasBlock {
			continue
		}
		inner := sc
		switch {
		case d.name == "server" && sc.kind == "http":
			inner.kind, inner.where = "server", "server "+serverName(d)
		case d.name == "location" && sc.kind != "http":
			inner.kind, inner.where = "location", sc.where+", location "+strings.Join(d.args, " ")
		default:
			continue
		}
		if err := p.walk(d.block, inner); err != nil {
			return err
		}
	}
	return nil
}

func firstArg(d *ngxDirective) string {
	if len(d.args) == 0 {
		return ""
	}
	return d.args[0]
}

// serverName names a server block by its first server_name, else by where it is.
func serverName(d *ngxDirective) string {
	for _, c := range d.block {
		if c.name == "server_name" {
			for _, n := range c.args {
				if n != "" && n != "_" {
					return n
				}
			}
		}
	}
	return "at " + d.at.String()
}

// emit records the limits of one block's limit_req lines, which all decide each request
// there, in the order nginx checks them.
func (p *nginxParser) emit(lines []*ngxDirective, sc ngxScope) error {
	seen := map[string]*ngxDirective{}
	for _, d := range lines {
		var zoneName string
		var burst, delay int64
		nodelay := false
		for _, a := range d.args {
			switch {
			case strings.HasPrefix(a, "zone="):
				zoneName = a[len("zone="):]
			case strings.HasPrefix(a, "burst="):
				n, err := strconv.ParseInt(a[len("burst="):], 10, 64)
				if err != nil || n <= 0 || a[len("burst=")] == '+' || n > ngxMaxCount {
					return ngxFail(d, "invalid burst value %q (want a whole number from 1 to %d)", a, int64(ngxMaxCount))
				}
				burst = n
			case a == "nodelay":
				nodelay, delay = true, 0
			case strings.HasPrefix(a, "delay="):
				n, err := strconv.ParseInt(a[len("delay="):], 10, 64)
				if err != nil || n <= 0 || a[len("delay=")] == '+' || n > ngxMaxCount {
					return ngxFail(d, "invalid delay value %q (want a whole number from 1 to %d)", a, int64(ngxMaxCount))
				}
				nodelay, delay = false, n
			default:
				return ngxFail(d, "invalid parameter %q", a)
			}
		}
		if zoneName == "" {
			return ngxFail(d, `"limit_req" must have "zone" parameter`)
		}
		z := p.zones[zoneName]
		if z == nil {
			return ngxFail(d, "limit_req zone=%s: no limit_req_zone defines zone %q", zoneName, zoneName)
		}
		if first := seen[zoneName]; first != nil {
			return ngxFail(d, `"limit_req" directive is duplicate: zone %s is already limited here at %s`, zoneName, first.at)
		}
		seen[zoneName] = d
		z.used = true
		params := []Param{{Name: "rate", Value: z.rate}}
		if burst > 0 {
			params = append(params, Param{Name: "burst", Value: strconv.FormatInt(burst, 10)})
		}
		switch {
		case nodelay:
			params = append(params, Param{Name: "nodelay", Flag: true})
		case delay > 0:
			params = append(params, Param{Name: "delay", Value: strconv.FormatInt(delay, 10)})
		}
		if sc.dryRun != nil {
			p.col.warn(sc.dryRun.at, "limit_req_dry_run on: nginx counts the limits of %s but refuses nothing; the specs model them enforcing", sc.where)
		}
		p.found(Found{
			Product:   "nginx",
			Params:    params,
			Key:       p.key(z, sc, z.key, 0),
			KeySource: z.key,
			Name:      z.name,
			Location:  sc.where,
			Status:    sc.status,
			// nginx's burst=N admits N+1 requests at once: the first leaves the excess at
			// zero.
			Promise: Promise{Limit: z.limit, Window: z.window, Burst: burst + 1},
			At:      d.at,
			Defined: z.at,
			KeyAt:   z.at,
		})
	}
	return nil
}

func (p *nginxParser) found(f Found) { p.col.found = append(p.col.found, f) }

// ngxMaxMapDepth bounds how many maps key resolution follows.
const ngxMaxMapDepth = 4

// key maps a zone's key (expr, or a map's value when depth > 0) onto rlsim's key, warning
// at the zone's line about anything that makes it differ; "" when rlsim has none.
func (p *nginxParser) key(z *ngxZone, sc ngxScope, expr string, depth int) string {
	name, ok := ngxVariable(expr)
	if !ok {
		if strings.Contains(expr, "$") {
			p.col.warn(z.at, "zone %s keys on %q, which joins several values; rlsim keys on one identity, so the zone has no key here", z.name, expr)
		} else {
			p.col.warn(z.at, "zone %s keys on the constant %q: one counter for every request; rlsim keys per client, so the zone has no key here", z.name, expr)
		}
		return ""
	}
	lower := strings.ToLower(name)
	switch {
	case lower == "binary_remote_addr" || lower == "remote_addr":
		return p.peerKey(z, sc)
	case lower == "realip_remote_addr":
		return "ip"
	case lower == "remote_user":
		p.col.warn(z.at, "zone %s keys on $remote_user: requests without HTTP basic authentication have an empty key, which nginx does not limit; rlsim limits every request", z.name)
		return "user"
	case lower == "http_x_forwarded_for":
		p.col.warn(z.at, "zone %s keys on the whole X-Forwarded-For header as the client sent it: a client that writes its own addresses there gets a new key for each; rlsim's nearest key is xff-leftmost", z.name)
		return "xff-leftmost"
	case lower == "uri" || lower == "document_uri":
		return "route"
	case lower == "request_uri":
		p.col.warn(z.at, "zone %s keys on $request_uri, which includes the query string; rlsim's route has none", z.name)
		return "route"
	case lower == "server_name" || lower == "host" || lower == "http_host":
		p.col.warn(z.at, "zone %s keys on $%s: one counter per virtual host that every client shares; rlsim keys per client, so the zone has no key here", z.name, name)
		return ""
	case strings.HasPrefix(lower, "http_"):
		header := strings.ReplaceAll(name[len("http_"):], "_", "-")
		if k, ok := headerKey(header); ok {
			p.col.warn(z.at, "zone %s keys on the %s header: requests without it have an empty key, which nginx does not limit; rlsim limits every request by its %s", z.name, header, k)
			return k
		}
		p.col.warn(z.at, "zone %s keys on the %s header, which is no identity rlsim's requests carry (it knows %s): no key", z.name, header, headerKeyList)
		return ""
	}
	if m := p.maps[name]; m != nil && depth < ngxMaxMapDepth {
		return p.mapKey(z, sc, name, m, depth)
	}
	p.col.warn(z.at, "zone %s keys on $%s, which rlsim cannot key on: no key", z.name, name)
	return ""
}

// mapKey follows a map whose every value is one and the same variable or empty (the
// usual way to exempt some clients from a limit) to that variable's key.
func (p *nginxParser) mapKey(z *ngxZone, sc ngxScope, name string, m *ngxMap, depth int) string {
	var target string
	empty := false
	for _, v := range m.values {
		switch {
		case v == "":
			empty = true
		case target == "" || v == target:
			target = v
		default:
			p.col.warn(m.at, "zone %s keys on $%s, which this map sets to %q or %q: rlsim cannot key on a choice of values, no key", z.name, name, target, v)
			return ""
		}
	}
	if target == "" {
		p.col.warn(m.at, "zone %s keys on $%s, which this map leaves empty for every request: nginx limits nothing", z.name, name)
		return ""
	}
	if empty {
		p.col.warn(m.at, "zone %s keys on $%s: this map gives some requests an empty key, which nginx does not limit; rlsim limits them all by %s", z.name, name, target)
	}
	return p.key(z, sc, target, depth+1)
}

// peerKey is the key of $remote_addr: the peer, unless the realip module replaces it
// with an address from a header.
func (p *nginxParser) peerKey(z *ngxZone, sc ngxScope) string {
	if sc.realIP == nil {
		return "ip"
	}
	header := strings.ToLower(firstArg(sc.realIP))
	if header != "x-forwarded-for" {
		p.col.warn(sc.realIP.at, "real_ip_header %s: $remote_addr of zone %s comes from something rlsim's requests do not carry; keyed as the peer (ip)", firstArg(sc.realIP), z.name)
		return "ip"
	}
	if sc.recursive {
		p.col.warn(sc.realIP.at, "real_ip_header X-Forwarded-For with real_ip_recursive on: $remote_addr of zone %s is the rightmost address outside set_real_ip_from, so xff:1 holds for one trusted proxy; --key xff:K for K", z.name)
	} else {
		p.col.warn(sc.realIP.at, "real_ip_header X-Forwarded-For: $remote_addr of zone %s is the address the last trusted proxy appended (xff:1)", z.name)
	}
	return "xff:1"
}
