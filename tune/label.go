package tune

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/rlsim/rlsim/traffic"
)

// AttackerRule says which requests of a log are the attacker's: FIELD=VALUE, with FIELD
// one of ip (an address or a CIDR prefix), user, account, tenant, api-key, route or
// header:NAME, and VALUE either the value or "@FILE", a file of values one a line
// (blank lines and lines starting with # left out). A request matching any rule of a
// list is an attacker's.
type AttackerRule struct {
	Text    string
	field   string
	header  string
	values  map[string]bool
	targets []netip.Prefix
}

// attackerFields are the fields a rule may test, with what they read of a request.
var attackerFields = map[string]func(*traffic.Request) string{
	"user":    func(r *traffic.Request) string { return r.User },
	"account": func(r *traffic.Request) string { return r.Account },
	"tenant":  func(r *traffic.Request) string { return r.Tenant },
	"api-key": func(r *traffic.Request) string { return r.APIKey },
	"route":   func(r *traffic.Request) string { return r.Route },
}

// AttackerFieldNames lists the fields of AttackerRule.
func AttackerFieldNames() []string {
	return []string{"ip", "user", "account", "tenant", "api-key", "route", "header:NAME"}
}

// ParseAttackerRule reads a rule; open opens the files of "@FILE" values.
func ParseAttackerRule(text string, open func(string) (io.ReadCloser, error)) (AttackerRule, error) {
	field, value, ok := strings.Cut(text, "=")
	field = strings.TrimSpace(field)
	if !ok || value == "" {
		return AttackerRule{}, fmt.Errorf("%q: want FIELD=VALUE or FIELD=@FILE (ip=203.0.113.0/24)", text)
	}
	r := AttackerRule{Text: text, field: field, values: map[string]bool{}}
	switch h, isHeader := strings.CutPrefix(field, "header:"); {
	case field == "ip":
	case isHeader && h != "":
		r.header = traffic.CanonicalHeader(h)
	case field == "status":
		return AttackerRule{}, fmt.Errorf("%q: rlsim's log formats do not read the status; label the lines (a label field) or name the attacker's addresses", text)
	case attackerFields[field] == nil:
		return AttackerRule{}, fmt.Errorf("%q: unknown field %q (want one of %s)", text, field, strings.Join(AttackerFieldNames(), ", "))
	}
	values := []string{value}
	if name, isFile := strings.CutPrefix(value, "@"); isFile {
		f, err := open(name)
		if err != nil {
			return AttackerRule{}, fmt.Errorf("%q: %w", text, err)
		}
		defer f.Close()
		values = nil
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			v := strings.TrimSpace(sc.Text())
			if v == "" || strings.HasPrefix(v, "#") {
				continue
			}
			if field == "ip" {
				if _, err := parsePrefix(v); err != nil {
					return AttackerRule{}, fmt.Errorf("%s:%d: %v", name, line, err)
				}
			}
			values = append(values, v)
		}
		if err := sc.Err(); err != nil {
			return AttackerRule{}, fmt.Errorf("%s: %w", name, err)
		}
		if len(values) == 0 {
			return AttackerRule{}, fmt.Errorf("%q: %s names no value", text, name)
		}
	}
	for _, v := range values {
		if field != "ip" {
			r.values[v] = true
			continue
		}
		p, err := parsePrefix(v)
		if err != nil {
			return AttackerRule{}, fmt.Errorf("%q: %v", text, err)
		}
		r.targets = append(r.targets, p)
	}
	return r, nil
}

func parsePrefix(v string) (netip.Prefix, error) {
	if strings.Contains(v, "/") {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR prefix", v)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address", v)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Header is the header the rule reads ("" for none), for what a log reader must read.
func (r AttackerRule) Header() string { return r.header }

// Field is the field the rule tests.
func (r AttackerRule) Field() string { return r.field }

// Match says whether the request is the attacker's under r. An address is the one the
// server saw (the client address of the line).
func (r AttackerRule) Match(q *traffic.Request) bool {
	switch {
	case r.field == "ip":
		a := q.ClientIP.Unmap()
		for _, p := range r.targets {
			if p.Contains(a) {
				return true
			}
		}
		return false
	case r.header != "":
		return r.values[q.Headers.Get(r.header)]
	}
	return r.values[attackerFields[r.field](q)]
}
