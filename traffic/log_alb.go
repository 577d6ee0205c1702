package traffic

import (
	"fmt"
)

func init() {
	RegisterLogFormat(LogFormat{
		Name:    "alb",
		Summary: "AWS Application Load Balancer access logs, to the microsecond",
		Example: `https 2026-01-01T10:00:59.912345Z app/my-lb/50dc6c495c0c9188 203.0.113.7:2817 10.0.0.1:80 0.001 0.010 0.000 200 200 34 366 ` +
			`"GET https://api.example.com:443/v1/items?page=2 HTTP/1.1" "curl/8.5" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 ` +
			`arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" ` +
			`"api.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2026-01-01T10:00:59.900123Z ` +
			`"forward" "-" "-" "10.0.0.1:80" "200" "-" "-"`,
		Fields: []string{"time", "ip", "route", "method", "path", "header:user-agent", "header:x-amzn-trace-id"},
		New: func(c LogConfig) (LineParser, error) {
			if err := c.fixedFields("alb"); err != nil {
				return nil, err
			}
			return albParser{c}, nil
		},
	})
}

// albParser reads AWS Application Load Balancer access logs: space-separated fields, some
// quoted, in the order AWS documents (type time elb client:port target:port ... "request"
// "user_agent" ... request_creation_time ...), fields AWS adds at the end ignored. The
// arrival is request_creation_time, when the load balancer received the request, to the
// microsecond (time, when it answered, where that field is missing or "-"). client:port
// is the client address (the last proxy's, when one stands in front); the request line's
// absolute URL gives the route ("GET https://host:443/a?b HTTP/1.1" → "GET /a").
// ALB logs no X-Forwarded-For and no user.
type albParser struct{ c LogConfig }

// albFields is how many fields albParser reads: up to request_creation_time.
const albFields = 22

func (p albParser) Parse(line []byte, l *LogLine) error {
	var f [albFields]field
	n, err := splitQuoted(line, f[:])
	if err != nil {
		return err
	}
	if n < 14 {
		return fmt.Errorf("%d fields, want at least 14 (type time elb client:port ... \"request\" \"user_agent\")", n)
	}
	when := f[1].text
	if n >= albFields && !f[21].dash() {
		when = f[21].text // request_creation_time
	}
	sec, nsec, whole, ok := parseISOTime(when)
	if !ok {
		return fmt.Errorf("time %q: want 2026-01-01T10:00:59.123456Z", clip(string(when)))
	}
	if l.Time, err = unixNanos(sec, nsec); err != nil {
		return err
	}
	l.Whole = whole
	r := &l.Request
	addr, ok := parseAddrPort(f[3].text)
	if !ok {
		return fmt.Errorf("client:port %q is not an address and port", clip(f[3].str()))
	}
	r.ClientIP = addr
	if !f[12].quoted || !f[13].quoted {
		return fmt.Errorf("request %q and user agent %q are not quoted", clip(f[12].str()), clip(f[13].str()))
	}
	if p.c.Want.Has(WantRoute) {
		r.Route = routeOf(f[12].str())
	}
	p.c.addField(r, "user-agent", f[13])
	if n > 17 {
		p.c.addField(r, "x-amzn-trace-id", f[17])
	}
	return nil
}
