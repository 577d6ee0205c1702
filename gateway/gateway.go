// Package gateway reads the rate limits of a gateway's own configuration file — nginx.conf,
// haproxy.cfg, an Envoy local_ratelimit filter, a Kong declarative config, Traefik's
// dynamic configuration — and writes each as the spec of rlsim's model of that product
// ("nginx:rate=10r/s burst=20 nodelay"), with the key it counts on in rlsim's words.
//
// Each configuration format is one file of this package that registers itself (Register,
// from init); nothing else names it. A format reads what it can model, names everything it
// cannot (a directive, a variable, an option) as a warning at its file and line, and
// refuses a malformed file with one *Error at the line at fault.
//
// The package produces strings: it does not know which product models the running build
// has, so the command that runs the specs parses them.
package gateway

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxFileBytes is the largest configuration file read, and the most all the files an
// include pulls in may hold together: a configuration is text a person writes.
const MaxFileBytes = 16 << 20

// Place is a line of a configuration file. File is the file's name as the findings show
// it: relative to the folder of the file given to Read, the name as written otherwise.
type Place struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// String is "file:line", or "" for the zero Place.
func (p Place) String() string {
	if p.File == "" {
		return ""
	}
	return p.File + ":" + strconv.Itoa(p.Line)
}

// Param is one parameter of a spec, in the product's words; Flag marks one written bare
// ("nodelay").
type Param struct {
	Name  string
	Value string
	Flag  bool
}

// Promise is what a limit advertises, as rlsim's policy writes it: Limit units per
// Window, and Burst the most it admits at once (0: not a bucket, the limit). The layered
// scenario sections use it; the spec, not the promise, is what the product's model runs.
type Promise struct {
	Limit  int64         `json:"limit"`
	Window time.Duration `json:"window"`
	Burst  int64         `json:"burst,omitempty"`
}

// Found is one limit a configuration sets.
type Found struct {
	// Product is the model's name, the part of the spec before its colon ("nginx").
	Product string
	// Params are the spec's parameters in the order the model's spec writes them.
	Params []Param
	// Key is what the limit counts on, as --key and scenario files write it ("ip",
	// "api-key", "xff:1"); empty when rlsim has no key for it (a warning says why).
	Key string
	// KeySource is the configuration's own words for the key ("$binary_remote_addr",
	// "src", "limit_by: consumer").
	KeySource string
	// Name is the configuration's name for the limit: the zone, the stick table, the
	// middleware; the plugin's or filter's name when it has none of its own.
	Name string
	// Location is where the limit applies, in the configuration's words ("server
	// api.example.com, location /api/"). Limits with the same Location all decide every
	// request there, and every one must admit it.
	Location string
	// Status is the status a refusal gets when the configuration sets one; 0 for the
	// product's default.
	Status int
	// Promise is what the limit advertises as "L per W".
	Promise Promise
	// At is the line that applies the limit (limit_req, the deny rule, the plugin).
	At Place
	// Defined is the line that defines its parameters, when that is another line
	// (limit_req_zone, the stick-table); zero otherwise.
	Defined Place
	// KeyAt is the line that chooses the key, when that is another line (the
	// limit_req_zone, the track-sc rule); zero otherwise.
	KeyAt Place
}

// Spec is the limit as a model spec: "PRODUCT:param=value flag …".
func (f Found) Spec() string {
	if len(f.Params) == 0 {
		return f.Product
	}
	parts := make([]string, len(f.Params))
	for i, p := range f.Params {
		parts[i] = p.Name
		if !p.Flag {
			parts[i] += "=" + p.Value
		}
	}
	return f.Product + ":" + strings.Join(parts, " ")
}

// Warning is something the configuration sets that the specs do not model, or that
// changes what they mean, at the line that sets it.
type Warning struct {
	At  Place
	Msg string
}

// String is "file:line: message".
func (w Warning) String() string {
	if w.At.File == "" {
		return w.Msg
	}
	return w.At.String() + ": " + w.Msg
}

// Result is what Read found in one configuration (with the files it includes).
type Result struct {
	// File is the configuration as it was given; Format the format read.
	File   string
	Format string
	// Found lists the limits in the order the configuration applies them: by location,
	// in the order each location first appears, and within one location in the order
	// they decide.
	Found    []Found
	Warnings []Warning
}

// Group is the limits of one location.
type Group struct {
	Location string
	Found    []Found
}

// Layered reports whether more than one limit decides each request of the location.
func (g Group) Layered() bool { return len(g.Found) > 1 }

// Groups gathers Found by Location, in the order each location first appears.
func (r *Result) Groups() []Group {
	var out []Group
	for _, f := range r.Found {
		i := slices.IndexFunc(out, func(g Group) bool { return g.Location == f.Location })
		if i < 0 {
			out = append(out, Group{Location: f.Location})
			i = len(out) - 1
		}
		out[i].Found = append(out[i].Found, f)
	}
	return out
}

// Specs lists the distinct specs of Found, in order.
func (r *Result) Specs() []string {
	var out []string
	for _, f := range r.Found {
		if s := f.Spec(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Keys lists the distinct keys of Found that rlsim has, in order.
func (r *Result) Keys() []string {
	var out []string
	for _, f := range r.Found {
		if f.Key != "" && !slices.Contains(out, f.Key) {
			out = append(out, f.Key)
		}
	}
	return out
}

// Error is a configuration file Read cannot read, at the line (and column, when known)
// at fault. File is the path as it was opened.
type Error struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *Error) Error() string {
	where := e.File
	switch {
	case e.Line > 0 && e.Column > 0:
		where = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	case e.Line > 0:
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return where + ": " + strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(e.Msg)
}

// ErrFormat is wrapped by Read when it cannot tell a file's format, or is told one it does
// not know: a problem the command line fixes (--config-format).
var ErrFormat = errors.New("configuration format")

// Files opens the files a configuration includes. Paths are as the configuration writes
// them, made absolute by the format against the folder it resolves includes from.
type Files interface {
	ReadFile(path string) ([]byte, error)
	// Glob lists the files a pattern matches, sorted.
	Glob(pattern string) ([]string, error)
}

// OSFiles reads the files of the operating system.
type OSFiles struct{}

// ReadFile reads path, refusing a file larger than MaxFileBytes.
func (OSFiles) ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB: not a configuration file", MaxFileBytes>>20)
	}
	return data, nil
}

// Glob lists the files pattern matches, sorted.
func (OSFiles) Glob(pattern string) ([]string, error) {
	m, err := filepath.Glob(pattern)
	slices.Sort(m)
	return m, err
}

// Source is what a format's Parse reads: the file given, and a way to open the files it
// includes.
type Source struct {
	// Path is the file as given (to open and to name in errors); Name is how findings
	// name it (its base name).
	Path, Name string
	Data       []byte
	Files      Files
}

// Format is one configuration format, as Register records it.
type Format struct {
	// Name is what --config-format calls it ("nginx").
	Name string
	// Summary is one line for help.
	Summary string
	// Sniff scores how much a file of that name and content looks like this format: 0
	// not at all; the highest score of all formats wins.
	Sniff func(name string, data []byte) int
	// Parse reads src. It returns an *Error for a file it cannot read.
	Parse func(src *Source) (*Result, error)
}

var formats []Format

// Register makes a configuration format known to Read. Formats call it from init; a
// second format of the same name is a programming mistake and panics.
func Register(f Format) {
	if f.Name == "" || f.Sniff == nil || f.Parse == nil {
		panic("gateway: Register needs a name, Sniff and Parse")
	}
	if slices.ContainsFunc(formats, func(o Format) bool { return o.Name == f.Name }) {
		panic("gateway: format " + f.Name + " registered twice")
	}
	formats = append(formats, f)
	slices.SortFunc(formats, func(a, b Format) int { return strings.Compare(a.Name, b.Name) })
}

// Formats lists the registered formats, sorted by name.
func Formats() []Format { return slices.Clone(formats) }

// FormatNames lists the registered formats' names, sorted.
func FormatNames() []string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.Name
	}
	return names
}

func lookupFormat(name string) (Format, bool) {
	i := slices.IndexFunc(formats, func(f Format) bool { return f.Name == name })
	if i < 0 {
		return Format{}, false
	}
	return formats[i], true
}

// Read reads the configuration at path in format (empty: detected from the name and
// content) with the files it includes, and returns the limits it sets.
func Read(path, format string) (*Result, error) {
	data, err := OSFiles{}.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	return Parse(&Source{Path: path, Name: filepath.Base(path), Data: data, Files: OSFiles{}}, format)
}

// Parse reads src in format (empty: detected).
func Parse(src *Source, format string) (*Result, error) {
	f, err := Detect(src.Name, src.Data, format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Path, err)
	}
	r, err := f.Parse(src)
	if err != nil {
		return nil, err
	}
	r.File, r.Format = src.Path, f.Name
	return r, nil
}

// Detect chooses the format of a file named name holding data: format itself when it is
// given, else the one whose Sniff scores highest. No score, or a tie, is an error
// wrapping ErrFormat that asks for --config-format.
func Detect(name string, data []byte, format string) (Format, error) {
	if format != "" {
		f, ok := lookupFormat(format)
		if !ok {
			return Format{}, fmt.Errorf("%w %q is not one rlsim reads (want %s)", ErrFormat, format, strings.Join(FormatNames(), ", "))
		}
		return f, nil
	}
	var best []Format
	top := 0
	for _, f := range formats {
		switch s := f.Sniff(name, data); {
		case s > top:
			best, top = []Format{f}, s
		case s == top && s > 0:
			best = append(best, f)
		}
	}
	switch len(best) {
	case 0:
		return Format{}, fmt.Errorf("cannot tell the %w of this file; name it with --config-format %s", ErrFormat, strings.Join(FormatNames(), "|"))
	case 1:
		return best[0], nil
	}
	var names []string
	for _, f := range best {
		names = append(names, f.Name)
	}
	return Format{}, fmt.Errorf("the file could be %s: name its %w with --config-format", strings.Join(names, " or "), ErrFormat)
}

// notLineBased reports whether a file's name says it holds a structured document (or
// prose) rather than a line-based configuration: nginx and HAProxy do not read those,
// however many of their words the content mentions.
func notLineBased(name string) bool {
	for _, ext := range []string{".md", ".yaml", ".yml", ".json", ".toml", ".html"} {
		if strings.HasSuffix(strings.ToLower(name), ext) {
			return true
		}
	}
	return false
}

// unwrapPath drops the operation and path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// collector gathers what a format finds, in order.
type collector struct {
	found    []Found
	warnings []Warning
}

// warn records a warning once: the same words at the same place are one warning,
// however many limits they concern.
func (c *collector) warn(at Place, format string, args ...any) {
	w := Warning{At: at, Msg: fmt.Sprintf(format, args...)}
	if !slices.Contains(c.warnings, w) {
		c.warnings = append(c.warnings, w)
	}
}

func (c *collector) result() *Result {
	return &Result{Found: c.found, Warnings: c.warnings}
}
