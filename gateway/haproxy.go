package gateway

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func init() {
	Register(Format{
		Name:    "haproxy",
		Summary: "haproxy.cfg: stick-table http_req_rate, track-sc, deny on sc_http_req_rate gt|ge N",
		Sniff:   sniffHAProxy,
		Parse:   parseHAProxy,
	})
}

var haSectionRE = regexp.MustCompile(`(?m)^\s*(frontend|backend|listen|defaults|global)(\s|$)`)

func sniffHAProxy(name string, data []byte) int {
	if notLineBased(name) {
		return 0
	}
	score := 0
	if strings.HasSuffix(name, ".cfg") || strings.HasPrefix(name, "haproxy") {
		score++
	}
	if haSectionRE.Match(data) {
		score += 3
	}
	if bytes.Contains(data, []byte("stick-table")) || bytes.Contains(data, []byte("http-request")) {
		score += 2
	}
	return score
}

// haWord is one word of a haproxy.cfg line and its 1-based column.
type haWord struct {
	text string
	col  int
}

// haSplit splits a line into words by HAProxy's rules (parse_line in src/tools.c):
// spaces and tabs separate words, '#' outside quotes starts a comment, a backslash
// escapes the next character (\t \r \n stand for control characters), '…' quotes
// everything, "…" quotes all but backslash escapes, and quotes may begin mid-word.
// Environment variables are left as written.
func haSplit(line string) ([]haWord, error) {
	var words []haWord
	var cur strings.Builder
	started, quote, qcol, wcol := false, byte(0), 0, 0
	flush := func() {
		if started {
			words = append(words, haWord{text: cur.String(), col: wcol})
		}
		cur.Reset()
		started = false
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		if !started && quote == 0 && ch != ' ' && ch != '\t' && ch != '#' {
			started, wcol = true, i+1
		}
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\\' && i+1 < len(line):
			i++
			switch line[i] {
			case 't':
				cur.WriteByte('\t')
			case 'r':
				cur.WriteByte('\r')
			case 'n':
				cur.WriteByte('\n')
			default:
				cur.WriteByte(line[i])
			}
		case quote == '"':
			if ch == '"' {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, qcol = ch, i+1
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '#':
			flush()
			return words, nil
		default:
			cur.WriteByte(ch)
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%d: unmatched quote", qcol)
	}
	flush()
	return words, nil
}

// haSections are the keywords that open a section of haproxy.cfg.
var haSections = map[string]bool{
	"global": true, "defaults": true, "frontend": true, "backend": true, "listen": true,
	"peers": true, "resolvers": true, "userlist": true, "cache": true, "program": true,
	"http-errors": true, "ring": true, "mailers": true, "fcgi-app": true, "log-forward": true,
	"traces": true, "crt-store": true,
}

// haLine is one line of a section: its words and where it is.
type haLine struct {
	words []haWord
	at    Place
}

func (l haLine) arg(i int) string {
	if i < len(l.words) {
		return l.words[i].text
	}
	return ""
}

// haTable is a stick table: the period of its http_req_rate, when it stores one.
type haTable struct {
	name   string
	period time.Duration // 0: the table stores no http_req_rate
	at     Place
}

// haTrack is a track-sc rule: the counter it fills, with what key, from which table.
type haTrack struct {
	counter int
	key     string
	table   string
	phase   int // the order of the rule sets: tcp-request connection, session, content, http-request
	line    haLine
}

// haProxy is one frontend, backend, listen or defaults section.
type haProxy struct {
	kind, name string
	at         Place
	table      *haTable
	acls       map[string][]haLine
	tracks     []haTrack
	rules      []haLine // the refusing rules, in order
	backends   []string // default_backend and use_backend targets
}

// haRateTest is a condition on a tracked counter's http_req_rate: gt or ge N.
type haRateTest struct {
	counter int    // -1 for src_http_req_rate
	table   string // the table the fetch names, "" for the tracked one
	op      string // "gt" or "ge"
	n       int64
	at      Place
}

type haproxyParser struct {
	src     *Source
	col     *collector
	proxies []*haProxy
	tables  map[string]*haTable
}

// parseHAProxy reads haproxy.cfg by HAProxy 2.6's rules for request rates: a stick table
// storing http_req_rate(PERIOD), a track-sc rule that fills a counter from it (and counts
// the request at once, refused or not), and a refusing rule (deny, reject, tarpit,
// silent-drop, return) whose condition compares the counter's rate gt or ge N, directly
// or through a named acl.
func parseHAProxy(src *Source) (*Result, error) {
	p := &haproxyParser{src: src, col: &collector{}, tables: map[string]*haTable{}}
	if err := p.read(); err != nil {
		return nil, err
	}
	for _, px := range p.proxies {
		if err := p.limits(px); err != nil {
			return nil, err
		}
	}
	return p.col.result(), nil
}

func (p *haproxyParser) fail(at Place, col int, format string, args ...any) error {
	return &Error{File: p.src.Path, Line: at.Line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// read splits the file into sections and records, for each proxy, its table, acls,
// track rules and refusing rules.
func (p *haproxyParser) read() error {
	var cur *haProxy
	section := ""
	for i, raw := range strings.Split(string(p.src.Data), "\n") {
		at := Place{File: p.src.Name, Line: i + 1}
		words, err := haSplit(strings.TrimSuffix(raw, "\r"))
		if err != nil {
			col, msg, _ := strings.Cut(err.Error(), ": ")
			c, _ := strconv.Atoi(col)
			return p.fail(at, c, "%s", msg)
		}
		if len(words) == 0 {
			continue
		}
		l := haLine{words: words, at: at}
		kw := words[0].text
		if haSections[kw] {
			section, cur = kw, nil
			switch kw {
			case "frontend", "backend", "listen", "defaults":
				cur = &haProxy{kind: kw, name: l.arg(1), at: at, acls: map[string][]haLine{}}
				if kw != "defaults" && cur.name == "" {
					return p.fail(at, 0, "%s needs a name", kw)
				}
				p.proxies = append(p.proxies, cur)
			}
			continue
		}
		if section == "peers" && kw == "table" {
			if err := p.stickTable(l, l.arg(1), 2); err != nil {
				return err
			}
			continue
		}
		if cur == nil {
			continue
		}
		if err := p.proxyLine(cur, l); err != nil {
			return err
		}
	}
	return nil
}

func (p *haproxyParser) proxyLine(px *haProxy, l haLine) error {
	switch kw := l.arg(0); kw {
	case "stick-table":
		if px.kind == "defaults" {
			return p.fail(l.at, 0, "stick-table is not allowed in defaults")
		}
		if px.table != nil {
			return p.fail(l.at, 0, "%s %s has a second stick-table (the first at %s)", px.kind, px.name, px.table.at)
		}
		if err := p.stickTable(l, px.name, 1); err != nil {
			return err
		}
		px.table = p.tables[px.name]
	case "acl":
		if len(l.words) < 3 {
			return p.fail(l.at, 0, "acl needs a name and a criterion")
		}
		px.acls[l.arg(1)] = append(px.acls[l.arg(1)], l)
	case "default_backend", "use_backend":
		px.backends = append(px.backends, l.arg(1))
	case "http-request", "tcp-request":
		return p.rule(px, l)
	}
	return nil
}

// haPhases orders the rule sets as HAProxy runs them.
var haPhases = map[string]int{"tcp-request connection": 1, "tcp-request session": 2, "tcp-request content": 3, "http-request": 4}

var haTrackRE = regexp.MustCompile(`^track-sc(\d+)$`)

// haRefusing are the actions that refuse a request.
var haRefusing = map[string]bool{"deny": true, "reject": true, "tarpit": true, "silent-drop": true, "return": true}

func (p *haproxyParser) rule(px *haProxy, l haLine) error {
	set, action := l.arg(0), 1
	if set == "tcp-request" {
		set += " " + l.arg(1)
		action = 2
	}
	phase, ok := haPhases[set]
	if !ok {
		return nil // tcp-request inspect-delay and the like
	}
	name := l.arg(action)
	if m := haTrackRE.FindStringSubmatch(name); m != nil {
		n, _ := strconv.Atoi(m[1])
		t := haTrack{counter: n, key: l.arg(action + 1), phase: phase, line: l}
		if t.key == "" || t.key == "if" || t.key == "unless" {
			return p.fail(l.at, 0, "%s needs a sample to track", name)
		}
		for i := action + 2; i < len(l.words); i++ {
			switch l.arg(i) {
			case "table":
				t.table = l.arg(i + 1)
				i++
			case "if", "unless":
				p.col.warn(l.at, "%s tracks only the requests its condition %q selects; rlsim counts every request", name, strings.Join(texts(l.words[i+1:]), " "))
				i = len(l.words)
			}
		}
		if t.table == "" {
			t.table = px.name
		}
		px.tracks = append(px.tracks, t)
		return nil
	}
	if haRefusing[name] {
		if px.kind == "defaults" && slices.ContainsFunc(l.words, func(w haWord) bool { return strings.Contains(w.text, "_rate") }) {
			p.col.warn(l.at, "a refusing rule in defaults is not read: rlsim reads the rules of frontends, backends and listens")
			return nil
		}
		px.rules = append(px.rules, l)
	}
	return nil
}

func texts(ws []haWord) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}

var haRateStoreRE = regexp.MustCompile(`^http_req_rate\(([^)]*)\)$`)

// stickTable reads "stick-table type T size S [expire E] [store a,b(p)] …" (or a peers
// section's "table NAME …", whose options start at word first+1).
func (p *haproxyParser) stickTable(l haLine, name string, first int) error {
	t := &haTable{name: name, at: l.at}
	typ, size := "", ""
	for i := first; i < len(l.words); i++ {
		switch w := l.arg(i); w {
		case "type":
			typ = l.arg(i + 1)
			i++
			if l.arg(i+1) == "len" {
				i += 2
			}
		case "size":
			size = l.arg(i + 1)
			i++
		case "expire", "peers", "srvkey", "write-to":
			i++
		case "nopurge", "recv-only":
		case "store":
			i++
			for _, s := range haList(l.arg(i)) {
				m := haRateStoreRE.FindStringSubmatch(s)
				if m == nil {
					continue
				}
				d, err := haTime(m[1])
				if err != nil || d <= 0 {
					return p.fail(l.at, l.words[i].col, "stick-table: http_req_rate(%s): the period must be a time (10s, 1m, 500ms)", m[1])
				}
				t.period = d
			}
		default:
			return p.fail(l.at, l.words[i].col, "stick-table: unknown argument %q", w)
		}
	}
	switch typ {
	case "ip", "ipv6", "integer", "string", "binary":
	case "":
		return p.fail(l.at, 0, "stick-table: missing type")
	default:
		return p.fail(l.at, 0, "stick-table: unknown type %q (want ip, ipv6, integer, string or binary)", typ)
	}
	if size == "" {
		return p.fail(l.at, 0, "stick-table: missing size")
	}
	if prev := p.tables[name]; prev != nil {
		return p.fail(l.at, 0, "a second stick-table named %s (the first at %s)", name, prev.at)
	}
	p.tables[name] = t
	return nil
}

// haList splits a comma-separated list whose items may hold commas in parentheses.
func haList(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// haTime reads a time as HAProxy writes one: a whole number with a unit (us, ms, s, m, h,
// d), milliseconds without one.
func haTime(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	unit := time.Millisecond
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, unit = strings.TrimSuffix(s, u.suffix), u.unit
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (s != "" && s[0] == '+') || n > int64(1<<62)/int64(unit) {
		return 0, fmt.Errorf("not a time")
	}
	return time.Duration(n) * unit, nil
}

// limits turns each refusing rule of px whose condition tests a request rate into limits.
func (p *haproxyParser) limits(px *haProxy) error {
	for _, rule := range px.rules {
		tests, err := p.condition(px, rule)
		if err != nil {
			return err
		}
		status := haStatus(rule)
		for _, t := range tests {
			p.limit(px, rule, t, status)
		}
	}
	return nil
}

// haStatus is the status a refusing rule sets (deny_status, return's status), 0 for
// HAProxy's default.
func haStatus(rule haLine) int {
	for i, w := range rule.words {
		if (w.text == "deny_status" || w.text == "status") && i+1 < len(rule.words) {
			n, err := strconv.Atoi(rule.words[i+1].text)
			if err == nil {
				return n
			}
		}
		if w.text == "if" || w.text == "unless" {
			break
		}
	}
	return 0
}

// condition returns the rate tests that make rule refuse: each alternative (|| or "or")
// of its condition that holds a rate test, warning about what else an alternative
// requires.
func (p *haproxyParser) condition(px *haProxy, rule haLine) ([]haRateTest, error) {
	i := slices.IndexFunc(rule.words, func(w haWord) bool { return w.text == "if" || w.text == "unless" })
	if i < 0 {
		return nil, nil
	}
	unless := rule.words[i].text == "unless"
	var terms [][][]haWord // alternatives, each a list of items, each an item's words
	var term [][]haWord
	words := rule.words[i+1:]
	for j := 0; j < len(words); j++ {
		w := words[j]
		switch w.text {
		case "||", "or":
			terms, term = append(terms, term), nil
		case "{", "!{":
			k := slices.IndexFunc(words[j+1:], func(x haWord) bool { return x.text == "}" })
			if k < 0 {
				return nil, p.fail(rule.at, w.col, "an anonymous acl opened with { is never closed")
			}
			item := append([]haWord{w}, words[j+1:j+1+k]...)
			term = append(term, item)
			j += k + 1
		default:
			term = append(term, []haWord{w})
		}
	}
	terms = append(terms, term)
	var out []haRateTest
	for _, term := range terms {
		var tests []haRateTest
		var others []string
		for _, item := range term {
			t, isRate, err := p.item(px, rule, item, unless, len(terms) == 1 && len(term) == 1)
			if err != nil {
				return nil, err
			}
			switch {
			case isRate && t != nil:
				tests = append(tests, *t)
			case !isRate:
				others = append(others, strings.Join(texts(item), " "))
			}
		}
		if len(tests) == 0 {
			continue
		}
		if len(others) > 0 {
			p.col.warn(rule.at, "the rate test here holds only with %s as well; rlsim's limit applies to every request", strings.Join(others, " and "))
		}
		if len(tests) > 1 {
			p.col.warn(rule.at, "one alternative of this condition needs several rates over their limits at once; read as several limits, which refuse when any is over")
		}
		out = append(out, tests...)
	}
	return out, nil
}

var (
	haScRE    = regexp.MustCompile(`^sc_http_req_rate\((\d+)(?:,([^)]*))?\)$`)
	haScNRE   = regexp.MustCompile(`^sc(\d+)_http_req_rate(?:\(([^)]*)\))?$`)
	haSrcRE   = regexp.MustCompile(`^src_http_req_rate(?:\(([^)]*)\))?$`)
	haOtherRE = regexp.MustCompile(`^(?:sc\d*|src)_[a-z0-9_]+(?:\(.*\))?$`)
)

// item reads one item of a condition: a named acl ("too_fast", "!too_fast") or an
// anonymous one ("{ sc_http_req_rate(0) gt 20 }"). isRate reports that it tests a
// counter's rate; t is the test when rlsim models it (nil after a warning when not).
// unless marks a condition after "unless", which refuses when the test fails: only a
// lone test that is the whole condition can be turned around.
func (p *haproxyParser) item(px *haProxy, rule haLine, item []haWord, unless, alone bool) (t *haRateTest, isRate bool, err error) {
	first := item[0].text
	negated := strings.HasPrefix(first, "!")
	var defs [][]haWord
	var at Place
	if first == "{" || first == "!{" {
		defs, at = [][]haWord{item[1:]}, rule.at
	} else {
		name := strings.TrimPrefix(first, "!")
		lines := px.acls[name]
		if len(lines) == 0 {
			return nil, false, nil // a predefined acl (METH_GET, TRUE) or one rlsim does not need
		}
		for _, l := range lines {
			defs = append(defs, l.words[2:])
		}
		at = lines[0].at
	}
	if len(defs) > 1 {
		for _, d := range defs {
			if len(d) > 0 && haOtherRE.MatchString(d[0].text) {
				p.col.warn(at, "acl %s is defined on %d lines, which HAProxy ORs together: rlsim reads one test per acl, so its rate tests are skipped", strings.TrimPrefix(first, "!"), len(defs))
				return nil, true, nil
			}
		}
		return nil, false, nil
	}
	if len(defs[0]) == 0 {
		return nil, false, p.fail(rule.at, item[0].col, "an empty anonymous acl")
	}
	rt, isRate := p.rateTest(defs[0], at)
	if !isRate {
		return nil, false, nil
	}
	if rt == nil {
		return nil, true, nil
	}
	if negated != unless {
		// A refusal when the test fails: only "le N" and "lt N" turn around into a limit.
		switch {
		case !alone:
			p.col.warn(rule.at, "a negated rate test inside a larger condition: skipped")
			return nil, true, nil
		case rt.op == "le":
			rt.op = "gt"
		case rt.op == "lt":
			rt.op = "ge"
		default:
			p.col.warn(rule.at, "refuses when the rate is not %s %d: rlsim's models refuse above a limit, skipped", rt.op, rt.n)
			return nil, true, nil
		}
	} else if rt.op != "gt" && rt.op != "ge" {
		p.col.warn(rule.at, "refuses when the rate is %s %d: rlsim's models refuse above a limit (gt or ge), skipped", rt.op, rt.n)
		return nil, true, nil
	}
	return rt, true, nil
}

// rateTest reads an acl's criterion and value. isRate reports that the criterion is a
// counter's rate; the test is nil (after a warning) when rlsim does not model it.
func (p *haproxyParser) rateTest(words []haWord, at Place) (t *haRateTest, isRate bool) {
	crit := words[0].text
	t = &haRateTest{at: at}
	switch m := haScRE.FindStringSubmatch(crit); {
	case m != nil:
		t.counter, _ = strconv.Atoi(m[1])
		t.table = m[2]
	case haScNRE.MatchString(crit):
		m := haScNRE.FindStringSubmatch(crit)
		t.counter, _ = strconv.Atoi(m[1])
		t.table = m[2]
	case haSrcRE.MatchString(crit):
		t.counter = -1
		t.table = haSrcRE.FindStringSubmatch(crit)[1]
	case haOtherRE.MatchString(crit):
		p.col.warn(at, "%s is not a request rate (rlsim models http_req_rate): skipped", crit)
		return nil, true
	default:
		return nil, false
	}
	rest := words[1:]
flags:
	for len(rest) > 0 && strings.HasPrefix(rest[0].text, "-") {
		switch rest[0].text {
		case "--":
			rest = rest[1:]
			break flags
		case "-m", "-f", "-M":
			if len(rest) > 1 {
				rest = rest[1:]
			}
		}
		rest = rest[1:]
	}
	var op, value string
	switch {
	case len(rest) == 2 && slices.Contains([]string{"gt", "ge", "lt", "le", "eq"}, rest[0].text):
		op, value = rest[0].text, rest[1].text
	case len(rest) == 1 && strings.HasSuffix(rest[0].text, ":"):
		op, value = "ge", strings.TrimSuffix(rest[0].text, ":")
	default:
		p.col.warn(at, "%s compared as %q: rlsim reads \"gt N\", \"ge N\" or \"N:\", skipped", crit, strings.Join(texts(rest), " "))
		return nil, true
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 0 {
		p.col.warn(at, "%s compared with %q, which is not a whole number: skipped", crit, value)
		return nil, true
	}
	t.op, t.n = op, n
	return t, true
}

// limit records the limit a rate test of rule sets, once its counter is traced to a
// track rule and a table with a period.
func (p *haproxyParser) limit(px *haProxy, rule haLine, t haRateTest, status int) {
	var track *haTrack
	if t.counter >= 0 {
		track = p.track(px, t.counter)
		if track == nil {
			p.col.warn(rule.at, "sc%d is filled by no track-sc%d of %s %s: the fetch fails and nothing is refused, skipped", t.counter, t.counter, px.kind, px.name)
			return
		}
		if p.owns(px, track) && (track.phase > haPhaseOf(rule) || track.phase == haPhaseOf(rule) && track.line.at.Line > rule.at.Line) {
			p.col.warn(rule.at, "this rule runs before track-sc%d at %s fills the counter, so it never refuses: skipped", t.counter, track.line.at)
			return
		}
	} else {
		p.col.warn(rule.at, "src_http_req_rate reads the table without counting the request, and a request it refuses is never tracked; rlsim's model counts refusals, skipped")
		return
	}
	tableName := track.table
	if t.table != "" {
		tableName = t.table
	}
	table := p.tables[tableName]
	switch {
	case table == nil:
		p.col.warn(rule.at, "sc%d tracks into table %s, which no stick-table defines: skipped", t.counter, tableName)
		return
	case table.period == 0:
		p.col.warn(table.at, "stick-table %s stores no http_req_rate: the rate test at %s fails and refuses nothing, skipped", tableName, rule.at)
		return
	}
	limit := t.n
	if t.op == "ge" {
		limit = t.n - 1 // the count includes the request itself
	}
	if limit < 1 {
		p.col.warn(rule.at, "sc_http_req_rate %s %d refuses every request once tracked: skipped", t.op, t.n)
		return
	}
	if action := haAction(rule); action == "tarpit" || action == "silent-drop" {
		p.col.warn(rule.at, "%s refuses by holding or dropping the connection, which costs the client more than a 429: rlsim counts it as a refusal", action)
	}
	key, src := p.key(track)
	p.col.found = append(p.col.found, Found{
		Product:   "haproxy",
		Params:    []Param{{Name: "period", Value: formatDuration(table.period)}, {Name: t.op, Value: strconv.FormatInt(t.n, 10)}},
		Key:       key,
		KeySource: src,
		Name:      tableName,
		Location:  px.kind + " " + px.name,
		Status:    status,
		Promise:   Promise{Limit: limit, Window: table.period},
		At:        rule.at,
		Defined:   table.at,
		KeyAt:     track.line.at,
	})
}

func haAction(rule haLine) string {
	if rule.arg(0) == "tcp-request" {
		return rule.arg(2)
	}
	return rule.arg(1)
}

func haPhaseOf(rule haLine) int {
	if rule.arg(0) == "tcp-request" {
		return haPhases["tcp-request "+rule.arg(1)]
	}
	return 4
}

// owns reports whether the track rule is one of px's own.
func (p *haproxyParser) owns(px *haProxy, t *haTrack) bool {
	for i := range px.tracks {
		if &px.tracks[i] == t {
			return true
		}
	}
	return false
}

// track finds what fills counter n for the requests of px: its own first track rule of
// that counter, else one of a frontend that hands it requests.
func (p *haproxyParser) track(px *haProxy, n int) *haTrack {
	for i := range px.tracks {
		if px.tracks[i].counter == n {
			return &px.tracks[i]
		}
	}
	if px.kind != "backend" {
		return nil
	}
	for _, fe := range p.proxies {
		if (fe.kind == "frontend" || fe.kind == "listen") && slices.Contains(fe.backends, px.name) {
			for i := range fe.tracks {
				if fe.tracks[i].counter == n {
					return &fe.tracks[i]
				}
			}
		}
	}
	return nil
}

var (
	haHdrRE   = regexp.MustCompile(`^(?:req\.)?(hdr|hdr_ip|fhdr)\(([^,)]+)(?:,(-?\d+))?\)$`)
	haMask6RE = regexp.MustCompile(`^ipmask\(32,(\d+)\)$`)
)

// key maps a tracked sample onto rlsim's key, warning at the track rule about what
// differs; "" when rlsim has none.
func (p *haproxyParser) key(t *haTrack) (key, source string) {
	expr := t.key
	at := t.line.at
	parts := haList(expr)
	fetch, convs := parts[0], parts[1:]
	switch {
	case fetch == "src" && len(convs) == 0:
		return "ip", expr
	case fetch == "src" && len(convs) == 1:
		if m := haMask6RE.FindStringSubmatch(convs[0]); m != nil {
			if bits, err := strconv.Atoi(m[1]); err == nil && bits <= 128 {
				return "ipv6/" + m[1], expr
			}
		}
	case len(convs) == 0 && (fetch == "path" || fetch == "base" || fetch == "url"):
		if fetch != "path" {
			p.col.warn(at, "track-sc%d %s: %s holds more than the path (host or query string), rlsim's route holds the path", t.counter, expr, fetch)
		}
		return "route", expr
	case len(convs) == 0 && haHdrRE.MatchString(fetch):
		m := haHdrRE.FindStringSubmatch(fetch)
		header, occ := strings.ToLower(m[2]), m[3]
		if header == "x-forwarded-for" {
			return p.xffKey(t, m[1], occ), expr
		}
		if k, ok := headerKey(header); ok {
			p.col.warn(at, "track-sc%d %s: a request without the header is not tracked, so HAProxy does not limit it; rlsim limits every request by its %s", t.counter, expr, k)
			return k, expr
		}
		p.col.warn(at, "track-sc%d %s: the %s header is no identity rlsim's requests carry (it knows %s): no key", t.counter, expr, m[2], headerKeyList)
		return "", expr
	}
	p.col.warn(at, "track-sc%d %s: rlsim has no key for this sample: no key", t.counter, expr)
	return "", expr
}

func (p *haproxyParser) xffKey(t *haTrack, fetch, occ string) string {
	at := t.line.at
	if fetch == "fhdr" {
		p.col.warn(at, "track-sc%d: req.fhdr(x-forwarded-for) is the whole header as the client sent it; rlsim's nearest key is xff-leftmost", t.counter)
		return "xff-leftmost"
	}
	n := -1
	if occ != "" {
		n, _ = strconv.Atoi(occ)
	}
	switch {
	case n == 1:
		p.col.warn(at, "track-sc%d: the first X-Forwarded-For address is the one the client wrote itself (xff-leftmost)", t.counter)
		return "xff-leftmost"
	case n < 0 && n >= -64:
		return "xff:" + strconv.Itoa(-n)
	}
	p.col.warn(at, "track-sc%d: X-Forwarded-For address %d from the left: rlsim counts addresses from the right (xff:K) or takes the leftmost, no key", t.counter, n)
	return ""
}
