package traffic

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file holds what the log formats share: reading addresses, times, numbers and
// request lines out of a line's bytes without allocating, so that a run keyed on the
// address builds no string per line.

// field is a span of a line: text, and whether it stood in quotes or brackets.
type field struct {
	text              []byte
	quoted, bracketed bool
	escaped           bool // a quoted field holding backslash escapes, unescaped by str
}

// str is the field's text as a string, its escapes undone.
func (f field) str() string {
	if !f.escaped {
		return string(f.text)
	}
	var b strings.Builder
	b.Grow(len(f.text))
	for i := 0; i < len(f.text); i++ {
		c := f.text[i]
		if c == '\\' && i+1 < len(f.text) {
			i++
			c = f.text[i]
		}
		b.WriteByte(c)
	}
	return b.String()
}

// dash says the field is empty or "-", as servers write a missing value.
func (f field) dash() bool {
	return len(f.text) == 0 || len(f.text) == 1 && f.text[0] == '-'
}

// splitFields splits a line into bare words, [bracketed] and "quoted" fields (with \" and
// \\ escapes inside quotes), the first len(out) of them into out, and returns how many
// there were.
func splitFields(line []byte, out []field) (int, error) { return split(line, out, true) }

// splitQuoted is splitFields for a format without bracketed fields, whose bare words may
// start with a bracket ("[2001:db8::1]:443").
func splitQuoted(line []byte, out []field) (int, error) { return split(line, out, false) }

func split(line []byte, out []field, brackets bool) (int, error) {
	n := 0
	i := 0
	var f field
	for i < len(line) {
		c := line[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		switch {
		case c == '[' && brackets:
			end := bytes.IndexByte(line[i:], ']')
			if end < 0 {
				return 0, errors.New("unclosed [ in the time field")
			}
			f = field{text: line[i+1 : i+end], bracketed: true}
			i += end + 1
		case c == '"':
			j := i + 1
			escaped := false
			if q := bytes.IndexByte(line[j:], '"'); q >= 0 && bytes.IndexByte(line[j:j+q], '\\') < 0 {
				j += q // no escape before the first quote: it closes the field
			} else {
				for ; j < len(line) && line[j] != '"'; j++ {
					if line[j] == '\\' && j+1 < len(line) {
						j++
						escaped = true
					}
				}
			}
			if j >= len(line) {
				return 0, errors.New("unclosed quote")
			}
			f = field{text: line[i+1 : j], quoted: true, escaped: escaped}
			i = j + 1
		default:
			end := i
			for end < len(line) && line[end] != ' ' && line[end] != '\t' {
				end++
			}
			f = field{text: line[i:end]}
			i = end
		}
		if n < len(out) {
			out[n] = f
		}
		n++
	}
	return n, nil
}

// parseAddr reads an IPv4 or IPv6 address (IPv4-mapped ones become IPv4), without
// allocating for IPv4.
func parseAddr(b []byte) (netip.Addr, bool) {
	if a, ok := parseIPv4(b); ok {
		return a, true
	}
	if bytes.IndexByte(b, ':') < 0 || bytes.IndexByte(b, '%') >= 0 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(string(b))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func parseIPv4(b []byte) (netip.Addr, bool) {
	var out [4]byte
	part, digits, val := 0, 0, 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if digits > 0 && val == 0 {
				return netip.Addr{}, false // a leading zero, which netip refuses too
			}
			val = val*10 + int(c-'0')
			digits++
			if val > 255 {
				return netip.Addr{}, false
			}
		case c == '.' && digits > 0 && part < 3:
			out[part] = byte(val)
			part++
			digits, val = 0, 0
		default:
			return netip.Addr{}, false
		}
	}
	if part != 3 || digits == 0 {
		return netip.Addr{}, false
	}
	out[3] = byte(val)
	return netip.AddrFrom4(out), true
}

// parseAddrPort reads "addr:port" or "[v6]:port" (ALB and HAProxy write clients so) and
// returns the address.
func parseAddrPort(b []byte) (netip.Addr, bool) {
	if len(b) > 0 && b[0] == '[' {
		end := bytes.IndexByte(b, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		return parseAddr(b[1:end])
	}
	i := bytes.LastIndexByte(b, ':')
	if i < 0 {
		return netip.Addr{}, false
	}
	if _, ok := parseUint(b[i+1:]); !ok {
		return netip.Addr{}, false
	}
	return parseAddr(b[:i])
}

// parseUint reads a decimal number of at most 18 digits.
func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseSeconds reads seconds written as a decimal number ("1767261659.123", "0.004")
// exactly, to the nanosecond: the whole seconds, the nanoseconds past them, and whether it
// had a fraction.
func parseSeconds(b []byte) (sec, nsec int64, fraction bool, ok bool) {
	whole, frac, hasDot := bytes.Cut(b, []byte{'.'})
	if len(whole) == 0 || len(whole) > 12 {
		return 0, 0, false, false
	}
	sec, ok = parseUint(whole)
	if !ok || (hasDot && len(frac) == 0) {
		return 0, 0, false, false
	}
	var sub int64
	scale := int64(1e8)
	for i, c := range frac {
		if c < '0' || c > '9' {
			return 0, 0, false, false
		}
		if i < 9 {
			sub += int64(c-'0') * scale
			scale /= 10
		}
	}
	return sec, sub, hasDot, true
}

// parseDuration reads a request's duration in seconds ("0.125", "4.1e-06"), exactly
// when it is written as a decimal, at most a million seconds.
func parseDuration(d string) (int64, error) {
	if sec, nsec, _, ok := parseSeconds([]byte(d)); ok && sec <= 1e6 {
		return sec*1e9 + nsec, nil
	}
	f, err := strconv.ParseFloat(d, 64)
	if err != nil || !(f >= 0 && f <= 1e6) {
		return 0, fmt.Errorf("duration %q: want seconds from 0 to 1000000 (0.125)", clip(d))
	}
	return int64(math.Round(f * 1e9)), nil
}

// daysFromCivil is the number of days from 1970-01-01 to the date (proleptic Gregorian).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

var monthDays = [13]int64{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// civil checks a date and time of day and returns its seconds since 1970-01-01 UTC.
func civil(y, mo, d, h, mi, s int64) (int64, bool) {
	if mo < 1 || mo > 12 || d < 1 || d > monthDays[mo] || h > 23 || mi > 59 || s > 59 {
		return 0, false
	}
	if mo == 2 && d == 29 && !(y%4 == 0 && (y%100 != 0 || y%400 == 0)) {
		return 0, false
	}
	return daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + s, true
}

// digits reads exactly len(b) decimal digits.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// fraction reads ".ddd" at the start of b (at most 9 digits kept): nanoseconds and bytes
// used; none when b does not start with a dot and a digit.
func fraction(b []byte) (ns int64, used int) {
	if len(b) < 2 || (b[0] != '.' && b[0] != ',') || b[1] < '0' || b[1] > '9' {
		return 0, 0
	}
	scale := int64(1e8)
	i := 1
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i <= 9 {
			ns += int64(b[i]-'0') * scale
			scale /= 10
		}
	}
	return ns, i
}

// monthNames are the months' abbreviations in order, three bytes each.
const monthNames = "JanFebMarAprMayJunJulAugSepOctNovDec"

// monthOf returns the month (1–12) abbreviated b, as the common log format writes it.
// Twelve comparisons of three bytes cost less than hashing them for a map, and this runs
// once a line.
func monthOf(b []byte) (int64, bool) {
	if len(b) != 3 {
		return 0, false
	}
	for i := 0; i < len(monthNames); i += 3 {
		if b[0] == monthNames[i] && b[1] == monthNames[i+1] && b[2] == monthNames[i+2] {
			return int64(i/3 + 1), true
		}
	}
	return 0, false
}

// parseCLFTime reads the common log format's time, "02/Jan/2006:15:04:05 -0700", with
// optional fractional seconds after the seconds; without a zone (HAProxy) it is UTC. It
// returns seconds of Unix time, the nanoseconds past them, and whether the time had whole
// seconds only.
func parseCLFTime(b []byte, zoneRequired bool) (sec, nsec int64, whole bool, ok bool) {
	if len(b) < 20 || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' {
		return 0, 0, false, false
	}
	d, ok1 := digits(b[0:2])
	mo, ok2 := monthOf(b[3:6])
	y, ok3 := digits(b[7:11])
	h, ok4 := digits(b[12:14])
	mi, ok5 := digits(b[15:17])
	s, ok6 := digits(b[18:20])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, 0, false, false
	}
	sec, ok = civil(y, mo, d, h, mi, s)
	if !ok {
		return 0, 0, false, false
	}
	rest := b[20:]
	sub, used := fraction(rest)
	rest = rest[used:]
	var offset int64
	switch {
	case len(rest) == 0 && !zoneRequired:
	case len(rest) == 6 && rest[0] == ' ' && (rest[1] == '+' || rest[1] == '-'):
		zh, ok1 := digits(rest[2:4])
		zm, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || zh > 23 || zm > 59 {
			return 0, 0, false, false
		}
		offset = zh*3600 + zm*60
		if rest[1] == '-' {
			offset = -offset
		}
	default:
		return 0, 0, false, false
	}
	return sec - offset, sub, used == 0, true
}

// parseISOTime reads an RFC 3339 time ("2026-01-01T10:00:59.123456Z", "…+01:00"), the
// form ALB, Envoy and nginx's $time_iso8601 write, as parseCLFTime returns it.
func parseISOTime(b []byte) (sec, nsec int64, whole bool, ok bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return 0, 0, false, false
	}
	y, ok1 := digits(b[0:4])
	mo, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	h, ok4 := digits(b[11:13])
	mi, ok5 := digits(b[14:16])
	s, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, 0, false, false
	}
	sec, ok = civil(y, mo, d, h, mi, s)
	if !ok {
		return 0, 0, false, false
	}
	rest := b[19:]
	sub, used := fraction(rest)
	if used > 0 && rest[0] == ',' {
		return 0, 0, false, false
	}
	rest = rest[used:]
	var offset int64
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		zh, ok1 := digits(rest[1:3])
		zm, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || zh > 23 || zm > 59 {
			return 0, 0, false, false
		}
		offset = zh*3600 + zm*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, 0, false, false
	}
	return sec - offset, sub, used == 0, true
}

// unixNanos is a time of seconds and nanoseconds of Unix time as one count of
// nanoseconds, or the error of a time outside the years the virtual clock counts.
func unixNanos(sec, nsec int64) (int64, error) {
	if sec < earliestUnix || sec >= latestUnix {
		return 0, fmt.Errorf("%s is outside the years the virtual clock counts (%d to %d: int64 nanoseconds of Unix time)",
			time.Unix(sec, nsec).UTC().Format(time.RFC3339Nano), 1678, 2261)
	}
	return sec*1e9 + nsec, nil
}

// parseLogTime reads a time as JSON lines and CSV write it: RFC 3339, or Unix seconds
// (with a fraction). It returns nanoseconds of Unix time and whether the time had whole
// seconds only.
func parseLogTime(s string) (int64, bool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, errNoTime
	}
	if sec, nsec, whole, ok := parseISOTime([]byte(s)); ok {
		ns, err := unixNanos(sec, nsec)
		return ns, whole, err
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		// What the fast reader leaves to the time package: a year of more than four
		// digits, or a zone the fast one does not know; the range is checked either way.
		ns, err := unixNanos(t.Unix(), int64(t.Nanosecond()))
		return ns, err == nil && t.Nanosecond() == 0 && !strings.Contains(s, "."), err
	}
	if sec, nsec, frac, ok := parseSeconds([]byte(s)); ok {
		ns, err := unixNanos(sec, nsec)
		return ns, !frac, err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return 0, false, fmt.Errorf("time %q: want RFC 3339 (2026-01-01T10:00:59.9Z) or Unix seconds", clip(s))
	}
	sec, frac := math.Modf(f)
	ns, err := unixNanos(int64(sec), int64(math.Round(frac*1e9)))
	return ns, frac == 0, err
}

// The years the virtual clock counts, in seconds of Unix time: [1678, 2262).
var (
	earliestUnix = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	latestUnix   = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

// routeOf turns a request line "GET /a/b?x=1 HTTP/1.1" into the route "GET /a/b"; a
// proxy's absolute form ("GET http://host:80/a HTTP/1.1", as ALB writes it) loses its
// scheme and host.
func routeOf(requestLine string) string {
	parts := strings.Fields(requestLine)
	if len(parts) < 2 {
		return requestLine
	}
	return parts[0] + " " + pathOf(parts[1])
}

// pathOf cuts the query off a request target, and the scheme and host off an absolute one.
func pathOf(target string) string {
	if i := strings.Index(target, "://"); i > 0 && !strings.Contains(target[:i], "/") {
		rest := target[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			target = rest[j:]
		} else {
			target = "/"
		}
	}
	path, _, _ := strings.Cut(target, "?")
	return path
}

// The slots of a record's values, in the order of FieldNames; the headers read follow.
const (
	slotTime = iota
	slotDuration
	slotIP
	slotXFF
	slotUser
	slotAccount
	slotTenant
	slotPlan
	slotAPIKey
	slotRoute
	slotMethod
	slotPath
	slotCost
	slotLabel
	slotActor
	slotHeaders
)

// recordColumns are the columns a record format (JSON lines, CSV) reads its identities
// from, after --field: which slots each column fills.
type recordColumns struct {
	slots   map[string][]int // column → the slots it fills
	headers []string         // the canonical names of the headers read, slot slotHeaders+i
}

func newRecordColumns(c LogConfig) recordColumns {
	rc := recordColumns{slots: map[string][]int{}}
	for i, name := range FieldNames {
		col := c.column(name)
		rc.slots[col] = append(rc.slots[col], i)
	}
	rc.headers = slices.Clone(c.Headers)
	for name := range c.Fields {
		if h, ok := strings.CutPrefix(name, "header:"); ok && !slices.Contains(rc.headers, h) {
			rc.headers = append(rc.headers, h)
		}
	}
	slices.Sort(rc.headers)
	for i, h := range rc.headers {
		col := c.column("header:" + h)
		rc.slots[col] = append(rc.slots[col], slotHeaders+i)
	}
	return rc
}

// known says whether col is a column the format reads or may read: an identity's, or a
// header's (http_NAME), which a strict read accepts whether or not the run keys on it.
func (rc recordColumns) known(col string) bool {
	_, ok := rc.slots[col]
	return ok || strings.HasPrefix(col, "http_")
}

// size is the number of slots.
func (rc recordColumns) size() int { return slotHeaders + len(rc.headers) }

// fillRecord builds a line of a record format from its values, by slot ("" where the
// record has none).
func fillRecord(c LogConfig, rc recordColumns, v []string, l *LogLine) error {
	t, whole, err := parseLogTime(v[slotTime])
	if err != nil {
		return err
	}
	l.Time, l.Whole = t, whole
	return fillIdentities(c, rc, v, l)
}

// fillIdentities is fillRecord for a line whose time is read already: the duration is
// taken off it, and the identities read.
func fillIdentities(c LogConfig, rc recordColumns, v []string, l *LogLine) error {
	if d := strings.TrimSpace(v[slotDuration]); d != "" && d != "-" {
		ns, err := parseDuration(d)
		if err != nil {
			return err
		}
		// A whole-second time stays whole: its placement inside the second comes later
		// and the duration is taken off the placed time alike.
		l.Time -= ns
	}
	r := &l.Request
	if ip := v[slotIP]; ip != "" {
		a, ok := parseAddr([]byte(ip))
		if !ok {
			return fmt.Errorf("ip %q is not an IP address", clip(ip))
		}
		r.ClientIP = a
	}
	if c.Want.Has(WantXFF) {
		r.XFFSent = v[slotXFF]
	}
	if c.Want&(WantUser|WantAccount) != 0 {
		r.User, r.Account = v[slotUser], v[slotAccount]
		if r.Account == "" {
			r.Account = r.User
		}
	}
	if c.Want.Has(WantTenant) {
		r.Tenant = v[slotTenant]
	}
	r.Plan = v[slotPlan] // a plan picks a per-plan quota whatever the key
	if c.Want.Has(WantAPIKey) {
		r.APIKey = v[slotAPIKey]
	}
	if c.Want.Has(WantActor) {
		r.Actor = v[slotActor]
	}
	if c.Want.Has(WantRoute) {
		r.Route = v[slotRoute]
		if method, path := v[slotMethod], v[slotPath]; r.Route == "" && (method != "" || path != "") {
			p, _, _ := strings.Cut(path, "?")
			r.Route = strings.TrimSpace(method + " " + p)
		}
	}
	if cost := v[slotCost]; cost != "" {
		n, err := strconv.ParseInt(cost, 10, 64)
		if err != nil || n < 1 || n > MaxCost {
			return fmt.Errorf("cost %q: want a whole number from 1 to %d", clip(cost), int64(MaxCost))
		}
		r.Cost = n
	}
	class, err := ParseClass(v[slotLabel])
	if err != nil {
		return err
	}
	r.Class = class
	for i, h := range rc.headers {
		c.addHeader(r, h, v[slotHeaders+i])
	}
	return nil
}
