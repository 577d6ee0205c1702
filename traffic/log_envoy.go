package traffic

import (
	"bytes"
	"fmt"
)

func init() {
	RegisterLogFormat(LogFormat{
		Name:    "envoy",
		Summary: "Envoy's default access log format (and Istio's, which adds the client address)",
		Example: `[2026-01-01T10:00:59.900Z] "GET /api/list?p=2 HTTP/1.1" 200 - 0 512 4 3 "198.51.100.4, 203.0.113.7" "curl/8.5" ` +
			`"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "api.example.com" "10.0.2.1:80"`,
		Fields: []string{"time", "ip", "xff", "route", "method", "path", "header:user-agent", "header:x-request-id", "header:host"},
		New: func(c LogConfig) (LineParser, error) {
			if err := c.fixedFields("envoy"); err != nil {
				return nil, err
			}
			return envoyParser{c}, nil
		},
	})
}

// envoyParser reads Envoy's default access log format,
//
//	[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE%
//	%RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%
//	"%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"
//
// and Istio's, which adds %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS%
// "%UPSTREAM_TRANSPORT_FAILURE_REASON%" after the flags and, after the upstream host,
// %UPSTREAM_CLUSTER% %UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS%
// %DOWNSTREAM_REMOTE_ADDRESS% %REQUESTED_SERVER_NAME% %ROUTE_NAME%. START_TIME is when
// the request started, to the millisecond. Envoy's own default logs no client address:
// key such a log on X-Forwarded-For (xff:K); Istio's gives it as DOWNSTREAM_REMOTE_ADDRESS.
type envoyParser struct{ c LogConfig }

func (p envoyParser) Parse(line []byte, l *LogLine) error {
	// Only the first field is in brackets; later ones may be "[v6]:port".
	end := bytes.IndexByte(line, ']')
	if len(line) == 0 || line[0] != '[' || end < 0 {
		return fmt.Errorf("want [START_TIME] \"METHOD PATH PROTOCOL\" first")
	}
	var f [24]field
	f[0] = field{text: line[1:end], bracketed: true}
	n, err := splitQuoted(line[end+1:], f[1:])
	if err != nil {
		return err
	}
	if n++; n < 2 || !f[1].quoted {
		return fmt.Errorf("want [START_TIME] \"METHOD PATH PROTOCOL\" first")
	}
	sec, nsec, whole, ok := parseISOTime(f[0].text)
	if !ok {
		return fmt.Errorf("start time %q: want 2026-01-01T10:00:59.900Z", clip(f[0].str()))
	}
	if l.Time, err = unixNanos(sec, nsec); err != nil {
		return err
	}
	l.Whole = whole
	// The layout: Envoy's has the quoted X-Forwarded-For at field 8, Istio's has a
	// quoted failure reason at 6 and X-Forwarded-For at 11, then six bare fields.
	xff, remote := 8, -1
	switch {
	case n == 13:
	case n == 22 && f[6].quoted:
		xff, remote = 11, 19
	default:
		return fmt.Errorf("%d fields, want 13 (Envoy's default format) or 22 (Istio's)", n)
	}
	for i := xff; i < xff+5; i++ {
		if !f[i].quoted {
			return fmt.Errorf("field %d (%q) is not quoted", i+1, clip(f[i].str()))
		}
	}
	if !isNumber(f[2].text) {
		return fmt.Errorf("response code %q is not a number", clip(f[2].str()))
	}
	r := &l.Request
	if remote >= 0 && !f[remote].dash() {
		addr, ok := parseAddrPort(f[remote].text)
		if !ok {
			return fmt.Errorf("downstream remote address %q is not an address and port", clip(f[remote].str()))
		}
		r.ClientIP = addr
	}
	if p.c.Want.Has(WantRoute) {
		r.Route = routeOf(f[1].str())
	}
	if p.c.Want.Has(WantXFF) && !f[xff].dash() {
		r.XFFSent = f[xff].str()
	}
	p.c.addField(r, "user-agent", f[xff+1])
	p.c.addField(r, "x-request-id", f[xff+2])
	p.c.addField(r, "host", f[xff+3])
	return nil
}
