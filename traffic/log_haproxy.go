package traffic

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

func init() {
	RegisterLogFormat(LogFormat{
		Name:    "haproxy",
		Summary: "HAProxy's HTTP log (option httplog), with or without the syslog prefix, to the millisecond",
		Example: `Jan  1 10:00:59 lb1 haproxy[14389]: 203.0.113.7:33317 [01/Jan/2026:10:00:59.900] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {alice|198.51.100.4} {} "GET /api/list?p=2 HTTP/1.1"`,
		Fields:  []string{"time", "ip", "route", "method", "path", "capture:N (--field user=capture:1)"},
		// The captured headers are in the order of haproxy.cfg's capture lines, which the
		// log does not name: --field says which is which.
		Mappable: true,
		New:      newHAProxyParser,
	})
}

// haproxyParser reads HAProxy's HTTP log format,
//
//	%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r
//
// after an optional syslog prefix ("Jan  1 10:00:59 host haproxy[pid]: "). %tr is when the
// request started, to the millisecond, in the local time of the machine HAProxy ran on,
// with no zone: it is read as UTC. %ci is the client address. The captured request headers
// %hr ({a|b}, in the order of haproxy.cfg's "capture request header" lines) are what
// --field maps: --field user=capture:1 reads the first, --field header:X-User=capture:2 the
// second.
type haproxyParser struct {
	c        LogConfig
	captures map[int][]int // capture number (from 1) → record slots
	cols     recordColumns
}

func newHAProxyParser(c LogConfig) (LineParser, error) {
	p := &haproxyParser{c: c, captures: map[int][]int{}, cols: newRecordColumns(c)}
	for col, slots := range p.cols.slots {
		k, ok := strings.CutPrefix(col, "capture:")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("--field ...=%s: want capture:N with N the header's place among haproxy.cfg's capture request header lines (1 to 64)", col)
		}
		p.captures[n] = slots
	}
	for name, col := range c.Fields {
		if !strings.HasPrefix(col, "capture:") {
			return nil, fmt.Errorf("--field %s=%s: HAProxy's log maps only its captured request headers, capture:1, capture:2, ...", name, col)
		}
	}
	return p, nil
}

func (p *haproxyParser) Parse(line []byte, l *LogLine) error {
	// The record starts at the first "addr:port [" after an optional syslog prefix.
	start := -1
	for i := 0; i+1 < len(line); i++ {
		if line[i] == ' ' && line[i+1] == '[' && i > 0 {
			j := bytes.LastIndexByte(line[:i], ' ') + 1
			if _, ok := parseAddrPort(line[j:i]); ok {
				start = j
				break
			}
		}
	}
	if start < 0 {
		return errors.New(`no "client:port [date]" in the line`)
	}
	rest := line[start:]
	client := rest[:bytes.IndexByte(rest, ' ')]
	// The client may be "[v6]:port", which is not a bracketed field.
	var f [11]field
	n, err := splitFields(rest[len(client):], f[1:])
	if err != nil {
		return err
	}
	if n++; n < 12 {
		return fmt.Errorf("%d fields from the client address, want at least 12", n)
	}
	addr, _ := parseAddrPort(client)
	r := &l.Request
	r.ClientIP = addr
	if !f[1].bracketed {
		return fmt.Errorf("date %q is not in [brackets]", clip(f[1].str()))
	}
	sec, nsec, whole, ok := parseCLFTime(f[1].text, false)
	if !ok {
		return fmt.Errorf("date %q: want 01/Jan/2026:10:00:59.900", clip(f[1].str()))
	}
	if l.Time, err = unixNanos(sec, nsec); err != nil {
		return err
	}
	l.Whole = whole
	if !isNumber(f[5].text) {
		return fmt.Errorf("status %q is not a number", clip(f[5].str()))
	}
	// After the queues (field 12): the captured headers in braces, then the request.
	tail := rest[len(client):]
	for i := 1; i < 12; i++ {
		tail = skipField(tail)
	}
	tail = bytes.TrimLeft(tail, " ")
	v := make([]string, p.cols.size())
	for group := 0; len(tail) > 0 && tail[0] == '{'; group++ {
		end := bytes.IndexByte(tail, '}')
		if end < 0 {
			return errors.New("unclosed { in the captured headers")
		}
		if group == 0 {
			for i, h := range bytes.Split(tail[1:end], []byte{'|'}) {
				for _, slot := range p.captures[i+1] {
					v[slot] = string(h)
				}
			}
		}
		tail = bytes.TrimLeft(tail[end+1:], " ")
	}
	if len(tail) < 2 || tail[0] != '"' {
		return errors.New("no quoted request line at the end")
	}
	var req [1]field
	if k, err := splitFields(tail, req[:]); err != nil || k != 1 || !req[0].quoted {
		return errors.New("the request line is not one quoted field at the end")
	}
	if p.c.Want.Has(WantRoute) {
		r.Route = routeOf(req[0].str())
	}
	if len(p.captures) > 0 {
		if err := fillIdentities(p.c, p.cols, v, l); err != nil {
			return err
		}
		if r.Route == "" && p.c.Want.Has(WantRoute) {
			r.Route = routeOf(req[0].str())
		}
	}
	return nil
}

// skipField returns what follows the first field of b (bare, [bracketed] or "quoted").
func skipField(b []byte) []byte {
	b = bytes.TrimLeft(b, " ")
	var f [1]field
	if len(b) == 0 {
		return b
	}
	switch b[0] {
	case '[':
		if i := bytes.IndexByte(b, ']'); i >= 0 {
			return b[i+1:]
		}
	case '"':
		if _, err := splitFields(b, f[:]); err == nil {
			return b[len(f[0].text)+2:]
		}
	}
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		return b[i:]
	}
	return nil
}
