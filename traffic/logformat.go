package traffic

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// LogFormat is one kind of access log that replay reads. Each format is one file of this
// package (log_*.go) that declares its parser and registers itself from init with
// RegisterLogFormat; nothing else names it. TestEveryLogFormatKeepsTheContract holds
// every registered format to what this type promises.
type LogFormat struct {
	// Name is what --log-format calls the format.
	Name string
	// Summary says in one line what writes the format.
	Summary string
	// Example is a line of the format as its server writes it, carrying a client address
	// and a time; the contract test reads it. A format with a header line gives the
	// header, a newline, then the line. A format defined by a spec (nginx) gives the spec
	// in ExampleSpec.
	Example     string
	ExampleSpec string
	// Extensions choose the format when --log-format is not given (".jsonl"); empty for
	// a format that is never the default.
	Extensions []string
	// Fields are the identities the format can read, by their --field names; Mappable says
	// --field may point them at columns of the log's own (JSON keys, CSV columns, nginx
	// variables), which Columns lists when they are fixed.
	Fields   []string
	Mappable bool
	// Header says the first line names the columns rather than being a request.
	Header bool
	// Spec says the format is defined by a string of the user's (nginx: the log_format).
	Spec bool
	// New compiles a parser for one run. It fails when the configuration cannot be used
	// with the format (a --field the format has no column for, a spec that cannot be read).
	New func(c LogConfig) (LineParser, error)
}

// LineParser reads the lines of one log. Parse holds no state between lines and may be
// called from several goroutines at once; it never keeps line, which the caller reuses.
type LineParser interface {
	// Parse reads one line (without its newline) into l: Time, Whole and Request. It
	// returns an error saying what is wrong with the line when it cannot be read.
	Parse(line []byte, l *LogLine) error
}

// HeaderParser is a LineParser whose log opens with a header line naming the columns:
// Header reads it before any Parse.
type HeaderParser interface {
	LineParser
	Header(line []byte) error
}

// LogLine is one line of a log, read.
type LogLine struct {
	// Time is when the request arrived, in nanoseconds of Unix time: the finest time the
	// line carries, corrected to the arrival where the line gives the request's duration.
	Time int64
	// Whole says the line's time has whole seconds only, so the requests of one second
	// cannot be told apart: Placement places them inside it.
	Whole bool
	// Line is the line's number in its input, counting from 1 (a header line too).
	Line int
	// Request is what the line says about who sent it. At is zero; Cost is at least 1.
	Request Request
}

// LogConfig is what one run asks of a log format.
type LogConfig struct {
	// Fields maps identities (by their --field names: user, ip, header:X-Api-Key, ...) onto
	// the log's own column names. An identity not in it is read from its default column.
	Fields map[string]string
	// Want is what the run reads; a parser may skip building what is not wanted, but
	// checks every line the same way whatever is wanted.
	Want Identities
	// Headers are the request headers the run keys on, in canonical form (CanonicalHeader).
	Headers []string
	// Spec is the format's definition, for formats that take one (nginx's log_format).
	Spec string
}

// Identities is a set of the identities a request carries, as a run asks for them.
type Identities uint16

// The identities a parser can be asked for. Time, cost and label are always read.
const (
	WantIP Identities = 1 << iota
	WantXFF
	WantUser
	WantAccount
	WantTenant
	WantPlan
	WantAPIKey
	WantRoute
	WantActor
	WantHeaders
	WantAll Identities = 1<<iota - 1
)

// Has says whether s holds every identity of w.
func (s Identities) Has(w Identities) bool { return s&w == w }

// FieldNames are the identities --field maps, with the column each is read from by
// default in JSON lines and CSV. A header is mapped as header:NAME.
var FieldNames = []string{"time", "duration", "ip", "xff", "user", "account", "tenant", "plan", "api_key", "route", "method", "path", "cost", "label", "actor"}

// FieldDocs says what each of FieldNames means in a log.
var FieldDocs = map[string]string{
	"time":     "when the line was written: RFC 3339, or Unix seconds (a fraction allowed)",
	"duration": "the request's duration in seconds; the arrival is then time − duration",
	"ip":       "the client address the server saw",
	"xff":      "the X-Forwarded-For header as received",
	"user":     "the authenticated user (also the account when there is no account)",
	"account":  "the account a request (a login) names",
	"tenant":   "the tenant",
	"plan":     "the tenant's plan",
	"api_key":  "the API key",
	"route":    `the route ("GET /a"), or method and path`,
	"method":   "the HTTP method",
	"path":     "the path (a query string is cut off)",
	"cost":     "the units the request costs (a whole number, default 1)",
	"label":    "legit or attacker",
	"actor":    "who sent it (one user, one campaign), for the harm figures",
}

var logFormats = map[string]LogFormat{}

// RegisterLogFormat makes a log format known. Formats call it from init; a second format
// of the same name, or one without a name, a parser or an example, is a programming
// mistake and panics.
func RegisterLogFormat(f LogFormat) {
	if f.Name == "" || f.New == nil || f.Example == "" {
		panic("traffic: RegisterLogFormat needs a name, a parser and an example line")
	}
	if _, dup := logFormats[f.Name]; dup {
		panic("traffic: log format " + f.Name + " registered twice")
	}
	logFormats[f.Name] = f
}

// LogFormats lists the registered formats' names, sorted.
func LogFormats() []string {
	names := make([]string, 0, len(logFormats))
	for n := range logFormats {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupLogFormat returns the format named name.
func LookupLogFormat(name string) (LogFormat, error) {
	f, ok := logFormats[name]
	if !ok {
		return LogFormat{}, fmt.Errorf("unknown log format %q (want %s)", name, strings.Join(LogFormats(), ", "))
	}
	return f, nil
}

// LogFormatFor returns the format a file's extension chooses (after a .gz), and
// "combined" when none does.
func LogFormatFor(file string) string {
	lower := strings.TrimSuffix(strings.ToLower(file), ".gz")
	for _, name := range LogFormats() {
		for _, ext := range logFormats[name].Extensions {
			if strings.HasSuffix(lower, ext) {
				return name
			}
		}
	}
	return "combined"
}

// CanonicalHeader is a header name as keys and logs compare it: lower case, with
// underscores read as dashes (nginx writes $http_x_api_key for X-Api-Key).
func CanonicalHeader(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
}

// ParseFieldMap reads --field values, each "name=column" with name one of FieldNames or
// header:NAME, into the map LogConfig.Fields takes.
func ParseFieldMap(specs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range specs {
		name, col, ok := strings.Cut(s, "=")
		name, col = strings.TrimSpace(name), strings.TrimSpace(col)
		if !ok || name == "" || col == "" {
			return nil, fmt.Errorf("%q: want name=column (user=uid)", s)
		}
		if h, isHeader := strings.CutPrefix(name, "header:"); isHeader {
			if h = CanonicalHeader(h); h == "" {
				return nil, fmt.Errorf("%q: header: needs a header name", s)
			}
			name = "header:" + h
		} else if !slices.Contains(FieldNames, name) {
			return nil, fmt.Errorf("%q: unknown name %q (want %s or header:NAME)", s, name, strings.Join(FieldNames, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%q: %s is mapped twice", s, name)
		}
		out[name] = col
	}
	return out, nil
}

// column is the column an identity is read from: the mapping's, else the default (the
// identity's own name; http_x_y for header x-y, as nginx names it).
func (c LogConfig) column(name string) string {
	if col, ok := c.Fields[name]; ok {
		return col
	}
	if h, ok := strings.CutPrefix(name, "header:"); ok {
		return "http_" + strings.ReplaceAll(h, "-", "_")
	}
	return name
}

// fixedFields refuses a --field mapping for a format whose fields are fixed.
func (c LogConfig) fixedFields(format string) error {
	if len(c.Fields) == 0 {
		return nil
	}
	var mappable []string
	for _, n := range LogFormats() {
		if logFormats[n].Mappable {
			mappable = append(mappable, n)
		}
	}
	return fmt.Errorf("--field: the %s format's fields are fixed; --field maps the columns of %s logs", format, strings.Join(mappable, ", "))
}

// wantsHeader says whether the run keys on the header of canonical name h.
func (c LogConfig) wantsHeader(h string) bool {
	return c.Want.Has(WantHeaders) && slices.Contains(c.Headers, h)
}

// addField adds header h with the text of field f to r when the run keys on it, building
// the string only then.
func (c LogConfig) addField(r *Request, h string, f field) {
	if c.wantsHeader(h) {
		c.addHeader(r, h, f.str())
	}
}

// addHeader adds header h = v to r when the run keys on it.
func (c LogConfig) addHeader(r *Request, h, v string) {
	if v == "" || v == "-" || !c.wantsHeader(h) {
		return
	}
	r.Headers.Add(h, v)
}

// errNoTime is the error of a line without a time.
var errNoTime = errors.New("no time")
