package traffic

import (
	"fmt"
	"strconv"
)

// isNumber says b is a whole number as strconv reads one (an optional sign, digits that
// fit in 64 bits), without allocating for plain digits.
func isNumber(b []byte) bool {
	if _, ok := parseUint(b); ok {
		return true
	}
	_, err := strconv.ParseInt(string(b), 10, 64)
	return err == nil
}

func init() {
	RegisterLogFormat(LogFormat{
		Name:    "combined",
		Summary: "the nginx/Apache combined format, with an optional X-Forwarded-For field after the user agent",
		Example: `203.0.113.7 - alice [01/Jan/2026:10:00:59.900 +0000] "GET /api/list?p=2 HTTP/1.1" 200 512 "-" "curl/8.5" "198.51.100.4"`,
		Fields:  []string{"time", "ip", "user", "account", "route", "method", "path", "xff", "header:user-agent", "header:referer"},
		New: func(c LogConfig) (LineParser, error) {
			if err := c.fixedFields("combined"); err != nil {
				return nil, err
			}
			return combinedParser{c}, nil
		},
	})
}

// combinedParser reads the nginx/Apache combined format: the common format's seven fields
// are required, referer and user agent are optional, and a third quoted field after them
// is read as X-Forwarded-For (as nginx's usual log_format main writes
// $http_x_forwarded_for). The time may carry fractional seconds ("10:00:59.900"). The host
// is the client address, the user ($remote_user) the user and the account, and the
// request line "GET /a?b HTTP/1.1" the route "GET /a".
//
//	203.0.113.7 - alice [01/Jan/2026:10:00:59.900 +0000] "GET /api/list?p=2 HTTP/1.1" 200 512 "-" "curl/8.5" "198.51.100.4"
type combinedParser struct{ c LogConfig }

func (p combinedParser) Parse(line []byte, l *LogLine) error {
	var f [10]field
	n, err := splitFields(line, f[:])
	if err != nil {
		return err
	}
	if n < 7 {
		return fmt.Errorf("%d fields, want at least 7 (host ident user [time] \"request\" status bytes)", n)
	}
	if n > 10 {
		return fmt.Errorf("%d fields, want at most 10 (combined plus X-Forwarded-For)", n)
	}
	r := &l.Request
	addr, ok := parseAddr(f[0].text)
	if !ok || f[0].quoted || f[0].bracketed {
		return fmt.Errorf("remote address %q is not an IP address", clip(f[0].str()))
	}
	r.ClientIP = addr
	if !f[3].bracketed {
		return fmt.Errorf("time %q is not in [brackets]", clip(f[3].str()))
	}
	sec, nsec, whole, ok := parseCLFTime(f[3].text, true)
	if !ok {
		return fmt.Errorf("time %q: want 01/Jan/2026:10:00:59 +0000", clip(f[3].str()))
	}
	if l.Time, err = unixNanos(sec, nsec); err != nil {
		return err
	}
	l.Whole = whole
	if !f[4].quoted {
		return fmt.Errorf("request line %q is not quoted", clip(f[4].str()))
	}
	if !isNumber(f[5].text) || f[5].quoted {
		return fmt.Errorf("status %q is not a number", clip(f[5].str()))
	}
	if !(len(f[6].text) == 1 && f[6].text[0] == '-') && !isNumber(f[6].text) {
		return fmt.Errorf("size %q is not a number or -", clip(f[6].str()))
	}
	if p.c.Want&(WantUser|WantAccount) != 0 && !(len(f[2].text) == 1 && f[2].text[0] == '-') {
		u := f[2].str()
		r.User, r.Account = u, u
	}
	if p.c.Want.Has(WantRoute) {
		r.Route = routeOf(f[4].str())
	}
	if n >= 8 {
		p.c.addField(r, "referer", f[7])
	}
	if n >= 9 {
		p.c.addField(r, "user-agent", f[8])
	}
	if n == 10 && p.c.Want.Has(WantXFF) && !f[9].dash() {
		r.XFFSent = f[9].str()
	}
	return nil
}
