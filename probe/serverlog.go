package probe

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// TagHeader is the header that carries each request's tag when a probe reads the server's
// log: "<run>-<n>", the run's tag (RunTag) and the request's number in the run. The log
// records it as nginx's $http_x_rlsim_probe, or as HAProxy's captured request header.
const TagHeader = "X-Rlsim-Probe"

// DefaultNginxLogFormat is the nginx log_format a server log is read by when none is
// given: the time the line was written, the request's duration (the arrival is their
// difference, on nginx's clock, to the millisecond), its status and its tag.
const DefaultNginxLogFormat = `$msec $request_time $status $http_x_rlsim_probe`

// serverLogWait is how long Match waits for requests missing from the log: a server
// writes a request's line after its response, so the last lines may come a moment after
// the probe's last answer. serverLogPoll is how often it looks again meanwhile.
const (
	serverLogWait = 2 * time.Second
	serverLogPoll = 50 * time.Millisecond
)

// serverLogReorder is how far out of order the log's lines may be: the lines are matched
// by tag, not order, and a line is written when its request completes (a delayed one
// after those that came later), so any order is accepted.
const serverLogReorder = 1 << 62

// RunTag is the tag of a probe that starts at start: its Unix nanoseconds in base 36, so
// that the lines of two probes in one log are told apart.
func RunTag(start time.Time) string { return strconv.FormatInt(start.UnixNano(), 36) }

// requestTag is the tag of the n-th request of run.
func requestTag(run string, n int) string { return run + "-" + strconv.Itoa(n) }

// ServerLog is a server's access log read for the arrival times the server itself
// recorded, matched to a probe's requests by their tags (TagHeader).
type ServerLog struct {
	// Path is the log's file and Format how it reads: "nginx" with a log_format, or
	// "haproxy" with the place of the tag among the captured request headers.
	Path   string
	Format string
	spec   string
	format traffic.LogFormat
	config traffic.LogConfig
	// offset and line are where the probe's lines start: the end of the log when it was
	// opened for a probe, its start for a log read afterwards; line counts the lines
	// before offset, so that errors name the line of the whole file.
	offset int64
	line   int
}

// ParseServerLogFormat reads a --server-log-format: "nginx" (DefaultNginxLogFormat),
// an nginx log_format as nginx.conf writes it (anything with a $), "haproxy" (HAProxy's
// HTTP log, the tag its first captured request header) or "haproxy:N" (the N-th).
func ParseServerLogFormat(s string) (format, spec string, capture int, err error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "nginx":
		return "nginx", DefaultNginxLogFormat, 0, nil
	case strings.Contains(s, "$"):
		return "nginx", s, 0, nil
	case s == "haproxy":
		return "haproxy", "", 1, nil
	}
	if n, ok := strings.CutPrefix(s, "haproxy:"); ok {
		if c, err := strconv.Atoi(n); err == nil && c >= 1 && c <= 64 {
			return "haproxy", "", c, nil
		}
		return "", "", 0, fmt.Errorf("%q: want haproxy:N with N the tag's place among the captured request headers (1 to 64)", s)
	}
	return "", "", 0, fmt.Errorf("%q: want nginx, an nginx log_format (with $msec, $request_time and $http_x_rlsim_probe), haproxy or haproxy:N", s)
}

// nginxNeeds are the variables a server log's log_format must hold.
var nginxNeeds = []struct {
	name string
	re   *regexp.Regexp
	why  string
}{
	{"$msec", regexp.MustCompile(`\$\{?msec\b`), "the time to the millisecond"},
	{"$request_time", regexp.MustCompile(`\$\{?request_time\b`), "taken off $msec to give the arrival"},
	{"$http_x_rlsim_probe", regexp.MustCompile(`\$\{?http_x_rlsim_probe\b`), "the tag of the probe's request (header " + TagHeader + ")"},
}

// OpenServerLog checks the log at path and its format (see ParseServerLogFormat).
// fromEnd makes the log read from its end as it is now, for a probe about to send: the
// lines written before it are not the probe's. An error here is the caller's to report
// as a bad command line (a format that cannot be read) or a file that cannot be opened.
func OpenServerLog(path, formatFlag string, fromEnd bool) (*ServerLog, error) {
	format, spec, capture, err := ParseServerLogFormat(formatFlag)
	if err != nil {
		return nil, err
	}
	s := &ServerLog{Path: path, Format: format, spec: spec}
	tag := "header:" + traffic.CanonicalHeader(TagHeader)
	s.config = traffic.LogConfig{Want: traffic.WantHeaders, Headers: []string{traffic.CanonicalHeader(TagHeader)}}
	if format == "nginx" {
		for _, n := range nginxNeeds {
			if !n.re.MatchString(spec) {
				return nil, fmt.Errorf("the log_format %q has no %s (%s)", spec, n.name, n.why)
			}
		}
		s.config.Spec = spec
		s.config.Fields = map[string]string{tag: "http_x_rlsim_probe"}
	} else {
		s.Format = "haproxy:" + strconv.Itoa(capture)
		s.config.Fields = map[string]string{tag: "capture:" + strconv.Itoa(capture)}
	}
	if s.format, err = traffic.LookupLogFormat(format); err != nil {
		return nil, err
	}
	if _, err := s.format.New(s.config); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fromEnd {
		// Count the lines before the end, so that a bad line is named by its place in
		// the file; a last line without its newline yet is the server's, still writing.
		var buf [64 << 10]byte
		for {
			n, err := f.Read(buf[:])
			s.line += bytes.Count(buf[:n], []byte{'\n'})
			s.offset += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Logged is one request of a probe as the server's log recorded it.
type Logged struct {
	// Arrival is when the server says the request arrived, in Unix nanoseconds, and
	// Line the line that says so.
	Arrival int64
	Line    int
}

// read reads the log's lines from where the probe's start, as far as the last complete
// line, and returns the requests of run by tag (a tag logged more than once has every
// line, in the order written) and the count of lines that are not the probe's. A line
// the format cannot read is an error naming the file and the line.
func (s *ServerLog) read(run string) (map[string][]Logged, int, int, error) {
	f, err := os.Open(s.Path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	offset, line := s.offset, s.line
	if fi, err := f.Stat(); err == nil && fi.Size() < offset {
		offset, line = 0, 0 // the log was rotated or truncated meanwhile: read it all
	}
	data, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<62))
	if err != nil {
		return nil, 0, 0, err
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	lr, err := traffic.OpenLog(bytes.NewReader(data), traffic.LogReaderOptions{
		Format: s.format, Config: s.config, Workers: 1, Strict: true, Reorder: serverLogReorder,
	})
	if err != nil {
		return nil, 0, 0, err
	}
	defer lr.Close()
	out := map[string][]Logged{}
	prefix := run + "-"
	other := 0
	var l traffic.LogLine
	for lr.Next(&l) {
		tag := l.Request.Headers.Get(traffic.CanonicalHeader(TagHeader))
		if !strings.HasPrefix(tag, prefix) {
			other++
			continue
		}
		out[tag] = append(out[tag], Logged{Arrival: l.Time, Line: line + l.Line})
	}
	if err := lr.Err(); err != nil {
		var le *traffic.LineError
		if errors.As(err, &le) {
			return nil, 0, 0, fmt.Errorf("%s:%d: %s", s.Path, line+le.Line, le.Reason)
		}
		return nil, 0, 0, fmt.Errorf("%s: %w", s.Path, err)
	}
	st := lr.Stats()
	for tag := range out {
		slices.SortFunc(out[tag], func(a, b Logged) int { return cmp.Compare(a.Line, b.Line) })
	}
	return out, other, st.Lines, nil
}

// LogMatch says how a probe's requests were found in the server's log.
type LogMatch struct {
	File   string `json:"file"`
	Format string `json:"format"`
	// Lines counts the lines read (those the server wrote during the probe, for a probe),
	// Other those that carry no tag of this probe's run.
	Lines int `json:"lines"`
	Other int `json:"other_lines"`
	// Matched counts the decisions found in the log, which are judged on the server's
	// arrival times; Missing are those that were not, placed at their send time plus
	// OffsetMS, the median over the matched of the server's arrival less the send time.
	Matched  int              `json:"matched"`
	Missing  []MissingRequest `json:"missing,omitempty"`
	OffsetMS float64          `json:"offset_ms"`
	// LoggedTwice counts the requests with more than one line (a client that sent a
	// request again on a new connection): each is judged at its first line's arrival.
	LoggedTwice int `json:"logged_twice"`
}

// MissingRequest is a decision the server's log has no line for.
type MissingRequest struct {
	Seq int    `json:"seq"`
	Key string `json:"key"`
	Tag string `json:"tag"`
}

// String says what matched in a line: "963 of 963 requests found in access.log (nginx)",
// with what is missing named.
func (m LogMatch) String() string {
	n := m.Matched + len(m.Missing)
	s := fmt.Sprintf("%d of %d requests found in %s (%s, %d lines, %d of other traffic); judged on the server's arrival times",
		m.Matched, n, m.File, m.Format, m.Lines, m.Other)
	if m.LoggedTwice > 0 {
		s += fmt.Sprintf("; %d logged more than once, judged at the first", m.LoggedTwice)
	}
	if len(m.Missing) > 0 {
		const shown = 10
		var names []string
		for i, r := range m.Missing {
			if i == shown {
				names = append(names, fmt.Sprintf("and %d more", len(m.Missing)-shown))
				break
			}
			names = append(names, fmt.Sprintf("seq %d (key %s, tag %s)", r.Seq, r.Key, r.Tag))
		}
		s += fmt.Sprintf("; %d missing, placed at their send time %+.2f ms: %s", len(m.Missing), m.OffsetMS, strings.Join(names, ", "))
	}
	return s
}

// Match gives obs's decisions the arrival times the server's log recorded for them, by
// their tags (Decision.Tag, of run), and sorts them by it (ties by send time, then by
// seq): the server's own clock replaces the estimate, and the jitter becomes MinJitter,
// the millisecond of the log's times (OneWay is left as obs has it). A decision the log has no line for is named in the
// match and placed at its send time plus the median offset of those found. With clock,
// it waits up to serverLogWait for the last lines to be written; without, it reads once.
// It is an error when no decision is found at all.
func (s *ServerLog) Match(ctx context.Context, clock Clock, obs Observed, run string) (Observed, LogMatch, error) {
	m := LogMatch{File: s.Path, Format: s.Format}
	var logged map[string][]Logged
	var deadline time.Time
	if clock != nil {
		deadline = clock.Now().Add(serverLogWait)
	}
	for {
		var err error
		if logged, m.Other, m.Lines, err = s.read(run); err != nil {
			return Observed{}, m, err
		}
		complete := true
		for _, d := range obs.Decisions {
			if len(logged[d.Tag]) == 0 {
				complete = false
				break
			}
		}
		if complete || clock == nil || !clock.Now().Before(deadline) {
			break
		}
		if err := clock.SleepUntil(ctx, clock.Now().Add(serverLogPoll)); err != nil {
			return Observed{}, m, err
		}
	}
	ds := slices.Clone(obs.Decisions)
	var offsets []int64
	found := make([]bool, len(ds))
	for i := range ds {
		d := &ds[i]
		ls := logged[d.Tag]
		if d.Tag == "" || len(ls) == 0 {
			continue
		}
		found[i] = true
		m.Matched++
		if len(ls) > 1 {
			m.LoggedTwice++
		}
		d.Arrival = ls[0].Arrival
		if d.Sent != 0 {
			offsets = append(offsets, d.Arrival-d.Sent)
		}
	}
	if m.Matched == 0 {
		return Observed{}, m, fmt.Errorf("%s: none of the %d requests is in the log (%d lines, none tagged by this run): does the server log the %s header (%s)?",
			s.Path, len(ds), m.Lines, TagHeader, s.hint())
	}
	var offset int64
	if len(offsets) > 0 {
		slices.Sort(offsets)
		offset = offsets[len(offsets)/2]
	}
	m.OffsetMS = ms(time.Duration(offset))
	for i := range ds {
		if !found[i] {
			d := &ds[i]
			m.Missing = append(m.Missing, MissingRequest{Seq: d.Seq, Key: d.Key, Tag: d.Tag})
			if d.Sent != 0 {
				d.Arrival = d.Sent + offset
			}
		}
	}
	slices.SortFunc(m.Missing, func(a, b MissingRequest) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.SortStableFunc(ds, func(a, b Decision) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.Sent, b.Sent), cmp.Compare(a.Seq, b.Seq))
	})
	// OneWay stays the estimate's, half the least round trip, which the probe reports;
	// the offset the log showed is the match's.
	return Observed{Decisions: ds, OneWay: obs.OneWay, Jitter: MinJitter}, m, nil
}

// hint says how the log is to record the tag.
func (s *ServerLog) hint() string {
	if s.Format == "nginx" {
		return "the log_format needs $http_x_rlsim_probe"
	}
	return "haproxy.cfg needs `capture request header " + TagHeader + " len 40`, the frontend's capture number " + strings.TrimPrefix(s.Format, "haproxy:")
}

// RunOf is the run's tag of decisions read from a probe's decisions file: what their tags
// share. It is an error when a decision has no tag (the probe sent none: it ran without
// --server-log) or the tags are of more than one run.
func RunOf(obs Observed, name string) (string, error) {
	run := ""
	for _, d := range obs.Decisions {
		r, _, ok := strings.Cut(d.Tag, "-")
		if !ok || r == "" {
			return "", fmt.Errorf("%s: seq %d has no tag (the probe ran without --server-log, so its requests cannot be found in a server's log)", name, d.Seq)
		}
		if run != "" && r != run {
			return "", fmt.Errorf("%s: seq %d is tagged by run %s, the others by %s: one probe's decisions at a time", name, d.Seq, r, run)
		}
		run = r
	}
	return run, nil
}
