package traffic

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

func init() {
	RegisterLogFormat(LogFormat{
		Name:        "nginx",
		Summary:     "a log written by an nginx log_format, given as the string from nginx.conf (--nginx-log-format)",
		Example:     `203.0.113.7 - alice [01/Jan/2026:10:00:59 +0000] "GET /api/list?p=2 HTTP/1.1" 200 512 1767261659.900 0.004 "198.51.100.4"`,
		ExampleSpec: `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent $msec $request_time "$http_x_forwarded_for"`,
		Fields:      []string{"time", "duration", "ip", "xff", "user", "account", "route", "method", "path", "header:NAME", "tenant", "plan", "api_key", "cost", "label", "actor"},
		Mappable:    true,
		Spec:        true,
		New: func(c LogConfig) (LineParser, error) {
			return compileNginx(c)
		},
	})
}

// nginxParser reads lines written by one nginx log_format. The format is compiled into
// literal text and variables; a variable's value runs to where the literal after it
// starts ($time_local, which holds a space, takes its known width). The variables read:
//
//	$remote_addr, $binary_remote_addr    the client address (ip)
//	$remote_user                         the user (and the account)
//	$msec                                the time, to the millisecond (preferred)
//	$time_iso8601, $time_local           the time, to the second
//	$request_time                        the request's duration: arrival = time − it
//	$request                             the route ("GET /a?b HTTP/1.1" → "GET /a")
//	$request_method, $request_uri, $uri  the route's method and path
//	$http_x_forwarded_for                X-Forwarded-For (xff)
//	$proxy_add_x_forwarded_for           X-Forwarded-For as nginx passes it on (xff)
//	$http_NAME                           the header NAME (header:NAME keys)
//	$tenant, $plan, $api_key, ...         a variable named like an identity, or any
//	                                     variable --field maps one to (--field user=http_x_user)
//
// Others ($status, $body_bytes_sent, $upstream_*, ...) are skipped. nginx writes "-" for
// an empty value and escapes '"', '\' and control bytes as \xHH (escape=json: as JSON
// does); both are undone.
type nginxParser struct {
	c      LogConfig
	cols   recordColumns
	tokens []nginxToken
	json   bool // escape=json
	// hasMsec, hasISO, hasLocal say which time variables the format has.
	hasMsec, hasISO, hasLocal bool
}

type nginxToken struct {
	literal []byte // text to match, for a literal
	name    string // the variable's name, for a variable
	width   int    // a variable's fixed width (0: up to the next literal)
	role    nginxRole
	slots   []int // the record slots a variable fills
}

type nginxRole uint8

const (
	roleOther nginxRole = iota
	roleMsec
	roleTimeISO
	roleTimeLocal
	roleRequest
	roleBinaryAddr
)

// compileNginx compiles c.Spec. It accepts the format as nginx.conf writes it — one or
// more quoted strings, optionally after "log_format NAME" and "escape=..." — or as the
// bare text.
func compileNginx(c LogConfig) (*nginxParser, error) {
	text, escape, err := nginxFormatText(c.Spec)
	if err != nil {
		return nil, err
	}
	p := &nginxParser{c: c, cols: newRecordColumns(c), json: escape == "json"}
	defaults := map[string]int{
		"remote_addr": slotIP, "remote_user": slotUser, "request_time": slotDuration,
		"request_method": slotMethod, "request_uri": slotPath, "uri": slotPath, "document_uri": slotPath,
		"http_x_forwarded_for": slotXFF, "proxy_add_x_forwarded_for": slotXFF,
	}
	mapped := map[string]bool{} // identities --field points at a variable
	for name := range c.Fields {
		mapped[name] = true
	}
	seen := map[string]bool{}
	mappedTime := false
	for i := 0; i < len(text); {
		if text[i] != '$' {
			j := strings.IndexByte(text[i:], '$')
			if j < 0 {
				j = len(text) - i
			}
			p.tokens = append(p.tokens, nginxToken{literal: []byte(text[i : i+j])})
			i += j
			continue
		}
		name, used := nginxVariable(text[i+1:])
		if name == "" {
			return nil, fmt.Errorf("log_format: a $ with no variable name after it at %q", clip(text[i:]))
		}
		i += 1 + used
		if n := len(p.tokens); n > 0 && p.tokens[n-1].literal == nil {
			return nil, fmt.Errorf("log_format: $%s follows $%s with nothing between them, so their values cannot be told apart", name, p.tokens[n-1].name)
		}
		t := nginxToken{name: name}
		switch name {
		case "msec":
			t.role, p.hasMsec = roleMsec, true
		case "time_iso8601":
			t.role, t.width, p.hasISO = roleTimeISO, len("2026-01-01T10:00:59+00:00"), true
		case "time_local":
			t.role, t.width, p.hasLocal = roleTimeLocal, len("01/Jan/2026:10:00:59 +0000"), true
		case "request":
			t.role = roleRequest
		case "binary_remote_addr":
			t.role = roleBinaryAddr
		}
		// The slots: what --field maps to this variable, else the variable's default
		// identity, else an identity of the same name (a $tenant set by a map).
		for _, col := range []string{name, "$" + name} {
			t.slots = append(t.slots, p.cols.slots[col]...)
		}
		if slot, ok := defaults[name]; ok && !mapped[FieldNames[slot]] {
			t.slots = append(t.slots, slot)
		}
		slices.Sort(t.slots)
		t.slots = slices.Compact(t.slots)
		mappedTime = mappedTime || slices.Contains(t.slots, slotTime)
		seen[name] = true
		p.tokens = append(p.tokens, t)
	}
	if !p.hasMsec && !p.hasISO && !p.hasLocal && !mappedTime {
		return nil, errors.New("log_format: no time variable ($msec, $time_iso8601 or $time_local); replay needs each request's time")
	}
	names := make([]string, 0, len(c.Fields))
	for name := range c.Fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		col := strings.TrimPrefix(c.Fields[name], "$")
		if !seen[col] {
			return nil, fmt.Errorf("--field %s=%s: the log_format has no $%s", name, c.Fields[name], col)
		}
	}
	return p, nil
}

// nginxFormatText strips what nginx.conf puts around a log_format string: the directive
// and its name, an escape= parameter, the quotes of each piece and the final semicolon.
func nginxFormatText(spec string) (text, escape string, err error) {
	s := strings.TrimSpace(spec)
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	if rest, ok := strings.CutPrefix(s, "log_format"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return "", "", errors.New("log_format: no name and no format")
		}
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), fields[0]))
	}
	if rest, ok := strings.CutPrefix(s, "escape="); ok {
		escape, s, _ = strings.Cut(rest, " ")
		if escape != "default" && escape != "json" && escape != "none" {
			return "", "", fmt.Errorf("log_format: escape=%s: want default, json or none", escape)
		}
		s = strings.TrimSpace(s)
	}
	if s == "" {
		return "", "", errors.New("log_format: the format is empty")
	}
	if s[0] != '\'' && s[0] != '"' {
		return s, escape, nil
	}
	var b strings.Builder
	for s != "" {
		q := s[0]
		if q != '\'' && q != '"' {
			return "", "", fmt.Errorf("log_format: %q is outside the quoted strings", clip(s))
		}
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			return "", "", errors.New("log_format: a quoted string is not closed")
		}
		b.WriteString(s[1 : 1+end])
		s = strings.TrimSpace(s[2+end:])
	}
	return b.String(), escape, nil
}

// nginxVariable reads a variable's name after its $: name or {name}.
func nginxVariable(s string) (name string, used int) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 2 {
			return "", 0
		}
		return s[1:end], end + 1
	}
	n := 0
	for n < len(s) && (s[n] == '_' || s[n] >= 'a' && s[n] <= 'z' || s[n] >= 'A' && s[n] <= 'Z' || s[n] >= '0' && s[n] <= '9') {
		n++
	}
	return s[:n], n
}

func (p *nginxParser) Parse(line []byte, l *LogLine) error {
	v := make([]string, p.cols.size())
	var msec, iso, local, request []byte
	var binaryAddr []byte
	pos := 0
	for i, t := range p.tokens {
		if t.literal != nil {
			if !bytes.HasPrefix(line[pos:], t.literal) {
				return fmt.Errorf("column %d: want %q, found %q", pos+1, clip(string(t.literal)), clip(string(line[pos:min(len(line), pos+len(t.literal))])))
			}
			pos += len(t.literal)
			continue
		}
		end := len(line)
		switch {
		case t.width > 0 && pos+t.width <= len(line) && (i+1 == len(p.tokens) || p.tokens[i+1].literal[0] == ' '):
			// A time holding a space, followed by a space: its width tells where it ends.
			end = pos + t.width
		case i+1 < len(p.tokens):
			k := bytes.Index(line[pos:], p.tokens[i+1].literal)
			if k < 0 {
				return fmt.Errorf("$%s: no %q after it", t.name, clip(string(p.tokens[i+1].literal)))
			}
			end = pos + k
		}
		value := line[pos:end]
		pos = end
		switch t.role {
		case roleMsec:
			msec = value
		case roleTimeISO:
			iso = value
		case roleTimeLocal:
			local = value
		case roleRequest:
			request = value
		case roleBinaryAddr:
			binaryAddr = value
		}
		if len(t.slots) > 0 && !(len(value) == 1 && value[0] == '-') {
			s := p.unescape(value)
			for _, slot := range t.slots {
				v[slot] = s
			}
		}
	}
	if pos != len(line) {
		return fmt.Errorf("column %d: %q after the end of the format", pos+1, clip(string(line[pos:])))
	}
	if err := p.time(l, msec, iso, local, v[slotTime]); err != nil {
		return err
	}
	if binaryAddr != nil && v[slotIP] == "" {
		raw := []byte(p.unescape(binaryAddr))
		a, ok := netip.AddrFromSlice(raw)
		if !ok {
			return fmt.Errorf("$binary_remote_addr: %d bytes, want 4 or 16", len(raw))
		}
		v[slotIP] = a.Unmap().String()
	}
	if request != nil && v[slotRoute] == "" && p.c.Want.Has(WantRoute) {
		if r := p.unescape(request); r != "-" {
			v[slotRoute] = routeOf(r)
		}
	}
	return fillIdentities(p.c, p.cols, v, l)
}

// time reads the finest time the line has: $msec, else $time_iso8601, else $time_local,
// else a variable --field maps the time to.
func (p *nginxParser) time(l *LogLine, msec, iso, local []byte, mapped string) error {
	if _, timeMapped := p.c.Fields["time"]; timeMapped || msec == nil && iso == nil && local == nil {
		t, w, err := parseLogTime(mapped)
		if err != nil {
			return err
		}
		l.Time, l.Whole = t, w
		return nil
	}
	var sec, nsec int64
	var whole, ok bool
	switch {
	case msec != nil:
		var frac bool
		sec, nsec, frac, ok = parseSeconds(msec)
		if !ok {
			return fmt.Errorf("$msec %q: want Unix seconds with milliseconds (1767261659.123)", clip(string(msec)))
		}
		whole = !frac
	case iso != nil:
		if sec, nsec, whole, ok = parseISOTime(iso); !ok {
			return fmt.Errorf("$time_iso8601 %q: want 2026-01-01T10:00:59+00:00", clip(string(iso)))
		}
	case local != nil:
		if sec, nsec, whole, ok = parseCLFTime(local, true); !ok {
			return fmt.Errorf("$time_local %q: want 01/Jan/2026:10:00:59 +0000", clip(string(local)))
		}
	}
	t, err := unixNanos(sec, nsec)
	if err != nil {
		return err
	}
	l.Time, l.Whole = t, whole
	return nil
}

// unescape undoes nginx's escaping of a value: \xHH (and, with escape=json, JSON's
// escapes).
func (p *nginxParser) unescape(b []byte) string {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b)
	}
	var out strings.Builder
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out.WriteByte(c)
			continue
		}
		switch n := b[i+1]; {
		case n == 'x' && i+3 < len(b):
			if v, err := strconv.ParseUint(string(b[i+2:i+4]), 16, 8); err == nil {
				out.WriteByte(byte(v))
				i += 3
				continue
			}
		case p.json && n == 'u' && i+5 < len(b):
			if v, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16); err == nil {
				out.WriteRune(rune(v))
				i += 5
				continue
			}
		case p.json && (n == '"' || n == '\\' || n == '/'):
			out.WriteByte(n)
			i++
			continue
		case p.json && (n == 'n' || n == 't' || n == 'r' || n == 'b' || n == 'f'):
			out.WriteByte(map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f'}[n])
			i++
			continue
		}
		out.WriteByte(c)
	}
	return out.String()
}
