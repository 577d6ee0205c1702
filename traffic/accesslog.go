package traffic

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/sim"
)

// LogFormats are the access-log formats ReadLog understands.
var LogFormats = []string{"combined", "jsonl", "csv"}

// LogEntry is one access-log line read into a request. Time is the line's own wall-clock
// time; Request.At is left zero for the caller to place on the run's timeline.
type LogEntry struct {
	Time    time.Time
	Line    int
	Request Request
}

// LogProblem is one line ReadLog could not read.
type LogProblem struct {
	Line   int
	Reason string
}

func (p LogProblem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Reason) }

// AccessLog is what ReadLog found: the entries in time order (ties keep file order), how
// many lines it read (blank ones too; a CSV header not), and every line it could not read
// (Bad counts them all, Problems keeps the first MaxLogProblems).
type AccessLog struct {
	Entries  []LogEntry
	Lines    int
	Bad      int
	Problems []LogProblem
}

// MaxLogProblems is how many unreadable lines an AccessLog keeps by line number.
const MaxLogProblems = 10

// maxLogLine bounds one line; a longer one is a problem line, not a crash.
const maxLogLine = 1 << 20

// ReadLog reads an access log in format (combined, jsonl or csv). A line that cannot be
// read — a blank line, a time outside the years the virtual clock counts (sim.CheckTime)
// among them — is counted and named, never dropped in silence.
// The result is an error only when the input cannot be read at all, or holds no
// readable line, or more unreadable lines than readable ones.
//
// combined is the nginx/Apache combined format, with the common format's first seven
// fields required, fractional seconds allowed in the time ("10:00:59.900"), and an
// optional third quoted field after referer and user agent read as X-Forwarded-For (as
// nginx's usual log_format main writes $http_x_forwarded_for):
//
//	203.0.113.7 - alice [01/Jan/2026:10:00:59.900 +0000] "GET /api/list?p=2 HTTP/1.1" 200 512 "-" "curl/8.5" "198.51.100.4"
//
// jsonl is one JSON object per line and csv a header line naming columns, then one row
// per line (quoted fields may not span lines); both use the same names: time (RFC 3339,
// or Unix seconds as a number), ip, xff, user, account, tenant, plan, api_key, route (or
// method and path), cost, label (legit or attacker), actor. time is required.
func ReadLog(r io.Reader, format string) (*AccessLog, error) {
	var parse func(line string) (LogEntry, error)
	var csvHeader []string
	switch format {
	case "combined":
		parse = parseCombined
	case "jsonl":
		parse = parseJSONLine
	case "csv":
		parse = func(line string) (LogEntry, error) { return parseCSVLine(csvHeader, line) }
	default:
		return nil, fmt.Errorf("unknown log format %q (want %s)", format, strings.Join(LogFormats, ", "))
	}
	out := &AccessLog{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLogLine)
	lineNo := 0
	problem := func(line int, reason string) {
		out.Bad++
		if len(out.Problems) < MaxLogProblems {
			out.Problems = append(out.Problems, LogProblem{Line: line, Reason: reason})
		}
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			out.Lines++
			problem(lineNo, "blank line")
			continue
		}
		if format == "csv" && csvHeader == nil {
			h, err := parseCSVHeader(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			csvHeader = h
			continue
		}
		out.Lines++
		e, err := parse(line)
		if err == nil {
			err = sim.CheckTime(e.Time)
		}
		if err != nil {
			problem(lineNo, err.Error())
			continue
		}
		e.Line = lineNo
		if e.Request.Cost == 0 {
			e.Request.Cost = 1
		}
		out.Entries = append(out.Entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes; is this an access log?", lineNo+1, maxLogLine)
		}
		return nil, err
	}
	if len(out.Entries) == 0 {
		if out.Bad > 0 {
			return nil, fmt.Errorf("none of the %d lines could be read as %s (first: %s)", out.Bad, format, out.Problems[0])
		}
		return nil, errors.New("the log holds no requests")
	}
	if out.Bad > len(out.Entries) {
		return nil, fmt.Errorf("%d of %d lines could not be read as %s (first: %s); is this the right --log-format?", out.Bad, out.Lines, format, out.Problems[0])
	}
	// Servers write a line when a request completes, so lines can be slightly out of
	// order; the simulation needs arrival order.
	slices.SortStableFunc(out.Entries, func(a, b LogEntry) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// combinedTime is the time layout of the combined format; Go accepts the optional
// fractional seconds after "05" when parsing.
const combinedTime = "02/Jan/2006:15:04:05 -0700"

func parseCombined(line string) (LogEntry, error) {
	fields, err := splitCombined(line)
	if err != nil {
		return LogEntry{}, err
	}
	if len(fields) < 7 {
		return LogEntry{}, fmt.Errorf("%d fields, want at least 7 (host ident user [time] \"request\" status bytes)", len(fields))
	}
	if len(fields) > 10 {
		return LogEntry{}, fmt.Errorf("%d fields, want at most 10 (combined plus X-Forwarded-For)", len(fields))
	}
	var e LogEntry
	addr, err := netip.ParseAddr(fields[0].text)
	if err != nil || fields[0].quoted || addr.Zone() != "" {
		return LogEntry{}, fmt.Errorf("remote address %q is not an IP address", clip(fields[0].text))
	}
	e.Request.ClientIP = addr.Unmap()
	if u := fields[2].text; u != "-" {
		e.Request.User, e.Request.Account = u, u
	}
	if !fields[3].bracketed {
		return LogEntry{}, fmt.Errorf("time %q is not in [brackets]", clip(fields[3].text))
	}
	e.Time, err = time.Parse(combinedTime, fields[3].text)
	if err != nil {
		return LogEntry{}, fmt.Errorf("time %q: want 01/Jan/2026:10:00:59 +0000", clip(fields[3].text))
	}
	if !fields[4].quoted {
		return LogEntry{}, fmt.Errorf("request line %q is not quoted", clip(fields[4].text))
	}
	e.Request.Route = routeOf(fields[4].text)
	if _, err := strconv.Atoi(fields[5].text); err != nil || fields[5].quoted {
		return LogEntry{}, fmt.Errorf("status %q is not a number", clip(fields[5].text))
	}
	if b := fields[6].text; b != "-" {
		if _, err := strconv.ParseInt(b, 10, 64); err != nil {
			return LogEntry{}, fmt.Errorf("size %q is not a number or -", clip(b))
		}
	}
	if len(fields) == 10 {
		if x := fields[9].text; x != "-" && x != "" {
			e.Request.XFFSent = x
		}
	}
	return e, nil
}

// routeOf turns a request line "GET /a/b?x=1 HTTP/1.1" into the route "GET /a/b".
func routeOf(requestLine string) string {
	parts := strings.Fields(requestLine)
	if len(parts) < 2 {
		return requestLine
	}
	path, _, _ := strings.Cut(parts[1], "?")
	return parts[0] + " " + path
}

type combinedField struct {
	text              string
	quoted, bracketed bool
}

// splitCombined splits a combined-format line into bare words, [bracketed] and "quoted"
// fields (with \" and \\ escapes inside quotes).
func splitCombined(line string) ([]combinedField, error) {
	var out []combinedField
	i := 0
	for i < len(line) {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '[':
			end := strings.IndexByte(line[i:], ']')
			if end < 0 {
				return nil, errors.New("unclosed [ in the time field")
			}
			out = append(out, combinedField{text: line[i+1 : i+end], bracketed: true})
			i += end + 1
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				b.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, errors.New("unclosed quote")
			}
			out = append(out, combinedField{text: b.String(), quoted: true})
			i = j + 1
		default:
			end := strings.IndexAny(line[i:], " \t")
			if end < 0 {
				end = len(line) - i
			}
			out = append(out, combinedField{text: line[i : i+end]})
			i += end
		}
	}
	return out, nil
}

// logRecord is a JSON line; the same names are the CSV columns.
type logRecord struct {
	Time    json.RawMessage `json:"time"`
	IP      string          `json:"ip"`
	XFF     string          `json:"xff"`
	User    string          `json:"user"`
	Account string          `json:"account"`
	Tenant  string          `json:"tenant"`
	Plan    string          `json:"plan"`
	APIKey  string          `json:"api_key"`
	Route   string          `json:"route"`
	Method  string          `json:"method"`
	Path    string          `json:"path"`
	Cost    *int64          `json:"cost"`
	Label   string          `json:"label"`
	Actor   string          `json:"actor"`
}

var logColumns = []string{"time", "ip", "xff", "user", "account", "tenant", "plan", "api_key", "route", "method", "path", "cost", "label", "actor"}

func parseJSONLine(line string) (LogEntry, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	var rec logRecord
	if err := dec.Decode(&rec); err != nil {
		return LogEntry{}, fmt.Errorf("not a JSON object of known fields: %v", err)
	}
	if dec.More() {
		return LogEntry{}, errors.New("more than one JSON value on the line")
	}
	var ts string
	switch {
	case len(rec.Time) == 0:
		return LogEntry{}, errors.New("no time")
	case rec.Time[0] == '"':
		if err := json.Unmarshal(rec.Time, &ts); err != nil {
			return LogEntry{}, fmt.Errorf("time: %v", err)
		}
	default:
		ts = string(bytes.TrimSpace(rec.Time))
	}
	var cost string
	if rec.Cost != nil {
		cost = strconv.FormatInt(*rec.Cost, 10)
	}
	return recordEntry(ts, rec, cost)
}

func parseCSVHeader(line string) ([]string, error) {
	h, err := csv.NewReader(strings.NewReader(line)).Read()
	if err != nil {
		return nil, fmt.Errorf("CSV header: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range h {
		c = strings.TrimSpace(c)
		if !slices.Contains(logColumns, c) {
			return nil, fmt.Errorf("CSV header: unknown column %q (known: %s)", clip(c), strings.Join(logColumns, ", "))
		}
		if seen[c] {
			return nil, fmt.Errorf("CSV header: column %q twice", c)
		}
		seen[c] = true
	}
	if !seen["time"] {
		return nil, errors.New("CSV header: no time column")
	}
	for i := range h {
		h[i] = strings.TrimSpace(h[i])
	}
	return h, nil
}

func parseCSVLine(header []string, line string) (LogEntry, error) {
	row, err := csv.NewReader(strings.NewReader(line)).Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return LogEntry{}, fmt.Errorf("CSV: %v", err)
	}
	if len(row) != len(header) {
		return LogEntry{}, fmt.Errorf("%d fields, the header names %d", len(row), len(header))
	}
	var rec logRecord
	var ts, cost string
	for i, col := range header {
		v := row[i]
		switch col {
		case "time":
			ts = v
		case "ip":
			rec.IP = v
		case "xff":
			rec.XFF = v
		case "user":
			rec.User = v
		case "account":
			rec.Account = v
		case "tenant":
			rec.Tenant = v
		case "plan":
			rec.Plan = v
		case "api_key":
			rec.APIKey = v
		case "route":
			rec.Route = v
		case "method":
			rec.Method = v
		case "path":
			rec.Path = v
		case "cost":
			cost = v
		case "label":
			rec.Label = v
		case "actor":
			rec.Actor = v
		}
	}
	return recordEntry(ts, rec, cost)
}

// recordEntry turns the fields shared by JSON lines and CSV into an entry.
func recordEntry(ts string, rec logRecord, cost string) (LogEntry, error) {
	var e LogEntry
	t, err := parseLogTime(ts)
	if err != nil {
		return LogEntry{}, err
	}
	e.Time = t
	r := &e.Request
	if rec.IP != "" {
		a, err := netip.ParseAddr(rec.IP)
		if err != nil || a.Zone() != "" {
			return LogEntry{}, fmt.Errorf("ip %q is not an IP address", clip(rec.IP))
		}
		r.ClientIP = a.Unmap()
	}
	r.XFFSent = rec.XFF
	r.User, r.Account, r.Tenant, r.Plan, r.APIKey, r.Actor = rec.User, rec.Account, rec.Tenant, rec.Plan, rec.APIKey, rec.Actor
	if r.Account == "" {
		r.Account = r.User
	}
	r.Route = rec.Route
	if r.Route == "" && (rec.Method != "" || rec.Path != "") {
		path, _, _ := strings.Cut(rec.Path, "?")
		r.Route = strings.TrimSpace(rec.Method + " " + path)
	}
	if cost != "" {
		c, err := strconv.ParseInt(cost, 10, 64)
		if err != nil || c < 1 || c > MaxCost {
			return LogEntry{}, fmt.Errorf("cost %q: want a whole number from 1 to %d", clip(cost), int64(MaxCost))
		}
		r.Cost = c
	}
	class, err := ParseClass(rec.Label)
	if err != nil {
		return LogEntry{}, err
	}
	r.Class = class
	return e, nil
}

// parseLogTime reads RFC 3339 or Unix seconds (with a fraction).
func parseLogTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("no time")
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-01-01T10:00:59.9Z) or Unix seconds", clip(s))
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), nil
}

// RecordedSource yields requests already placed on the run's timeline, in order.
type RecordedSource struct {
	reqs  []Request
	next  int
	label string
}

var _ Source = (*RecordedSource)(nil)

// NewRecorded returns a source over reqs, which must be in non-decreasing At order.
func NewRecorded(label string, reqs []Request) *RecordedSource {
	return &RecordedSource{reqs: reqs, label: label}
}

// Next implements Source.
func (s *RecordedSource) Next(r *Request) bool {
	if s.next >= len(s.reqs) {
		return false
	}
	*r = s.reqs[s.next]
	s.next++
	return true
}

func (s *RecordedSource) String() string { return s.label }
