package traffic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

func init() {
	RegisterLogFormat(LogFormat{
		Name:    "caddy",
		Summary: "Caddy's JSON access log (http.log.access), to the nanosecond",
		Example: `{"level":"info","ts":1767261659.9041,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"203.0.113.7","remote_port":"41342",` +
			`"client_ip":"203.0.113.7","proto":"HTTP/1.1","method":"GET","host":"api.example.com","uri":"/api/list?p=2","headers":{"User-Agent":["curl/8.5"],` +
			`"X-Forwarded-For":["198.51.100.4"]}},"bytes_read":0,"user_id":"alice","duration":0.0041,"size":512,"status":200}`,
		Fields:   []string{"time", "duration", "ip", "xff", "user", "route", "method", "path", "header:NAME", "any other: a dotted path (request.client_ip)"},
		Mappable: true,
		New: func(c LogConfig) (LineParser, error) {
			return caddyParser{c: c, cols: newRecordColumns(c)}, nil
		},
	})
}

// caddyParser reads Caddy's JSON access log. ts is when the line was written (Unix seconds
// with a fraction, or a time string when Caddy's time_format says so) and duration the
// request's (seconds): the arrival is ts − duration. request.remote_ip is the client
// address (the peer; request.client_ip is Caddy's choice among trusted proxies' headers),
// user_id the user, request.method and request.uri the route, request.headers the headers
// (X-Forwarded-For for xff). --field maps an identity to any value by its dotted path
// (--field ip=request.client_ip, --field tenant=request.headers.X-Tenant). A line of
// another logger (no request) is not an access and cannot be read.
type caddyParser struct {
	c    LogConfig
	cols recordColumns
}

// caddyDefaults are where each identity is in a Caddy log, unless --field says otherwise.
var caddyDefaults = map[string]string{
	"time": "ts", "duration": "duration", "ip": "request.remote_ip", "xff": "request.headers.X-Forwarded-For",
	"user": "user_id", "method": "request.method", "path": "request.uri",
}

func (p caddyParser) Parse(line []byte, l *LogLine) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	if _, ok := obj["request"].(map[string]any); !ok {
		logger, _ := obj["logger"].(string)
		return fmt.Errorf("not an access log entry (no request; logger %q)", clip(logger))
	}
	v := make([]string, p.cols.size())
	for i, name := range FieldNames {
		path, mapped := p.c.Fields[name]
		if !mapped {
			if path = caddyDefaults[name]; path == "" {
				continue
			}
		}
		s, err := caddyValue(obj, path)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		v[i] = s
	}
	for i, h := range p.cols.headers {
		path, mapped := p.c.Fields["header:"+h]
		if !mapped {
			path = "request.headers." + h
		}
		s, err := caddyValue(obj, path)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		v[slotHeaders+i] = s
	}
	if v[slotTime] == "" {
		return errNoTime
	}
	return fillRecord(p.c, p.cols, v, l)
}

// caddyValue finds a dotted path in a decoded line: a string, a number's digits, the
// first of a list of strings (a header's values); "" when the path is not there. Map keys
// compare case-insensitively, as header names do.
func caddyValue(obj map[string]any, path string) (string, error) {
	var cur any = obj
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", nil
		}
		next, ok := m[part]
		if !ok {
			for k, val := range m {
				if strings.EqualFold(k, part) {
					next, ok = val, true
					break
				}
			}
		}
		if !ok {
			return "", nil
		}
		cur = next
	}
	switch x := cur.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case []any:
		if len(x) == 0 {
			return "", nil
		}
		if s, ok := x[0].(string); ok {
			return s, nil
		}
	}
	return "", fmt.Errorf("want a string, a number or a list of strings")
}
