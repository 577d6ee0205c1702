package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/gateway"
)

type importOptions struct {
	*globalOptions
	file   string
	config string // --config-format
}

func newImportCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &importOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "import FILE",
		Short: "Read the rate limits of a gateway's configuration as model specs and keys",
		Long: `import reads the rate limits a gateway's own configuration sets — nginx.conf (and the
files it includes), haproxy.cfg, an Envoy local_ratelimit filter, a Kong declarative
config, Traefik's dynamic configuration — and prints each as the spec of rlsim's model of
that product, with the key it counts on, the line that sets it, and a scenario section per
location ready to paste into a scenario file. Limits that must all admit the same request
(several limit_req lines on one location, several deny rules in one frontend, a router's
chain of middlewares) are marked as one layered location.

Anything the configuration sets that rlsim does not model (a directive, a variable, a
header it has no key for) is named with its file and line, under warnings. A file it
cannot read is one error naming the line at fault.

compare, replay and worst-case take --import FILE to run the limits beside the built-in
algorithms, keyed as the configuration keys them unless --key is given.`,
		Example: `  # what an nginx.conf limits, and how (with the files it includes)
  rlsim import examples/import/nginx.conf

  # a HAProxy configuration, as JSON
  rlsim import examples/import/haproxy.cfg --format json

  # a YAML file, naming its format
  rlsim import examples/import/kong.yml --config-format kong

  # judge the configuration's limits on the token-burst scenario
  rlsim compare --scenario token-burst --import examples/import/nginx.conf --out ""`,
		Args: argCount(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			return runImport(o, streams)
		},
	}
	c.Flags().Var(configFormatValue(&o.config), "config-format", "the configuration's format: "+orList(gateway.FormatNames())+" (default: from the file's name and content)")
	g.addFormatFlag(c, "table", "json")
	return c
}

func configFormatValue(dst *string) *choiceValue {
	return &choiceValue{dst: dst, what: "configuration format", choices: gateway.FormatNames()}
}

// readConfig reads a gateway's configuration; a format that cannot be told is a problem
// of the command line.
func readConfig(file, format string) (*gateway.Result, error) {
	r, err := gateway.Read(file, format)
	if errors.Is(err, gateway.ErrFormat) {
		return nil, usageError{err: err}
	}
	return r, err
}

func runImport(o *importOptions, streams IO) error {
	r, err := readConfig(o.file, o.config)
	if err != nil {
		return err
	}
	warnMissingModels(streams.Err, r)
	var buf bytes.Buffer
	err = writeOutput(&buf, o.format, output{JSON: importJSONOf(r), Human: func(w io.Writer, _ bool) error {
		renderImportTable(w, r)
		return nil
	}})
	if err != nil {
		return err
	}
	if _, err := streams.Out.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing to stdout: %w", err)
	}
	return nil
}

// warnMissingModels says which specs this build cannot run: a product it has no model
// of, or a spec its model refuses.
func warnMissingModels(w io.Writer, r *gateway.Result) {
	var missing []string
	for _, f := range r.Found {
		if algorithms.Lookup(f.Product) == nil {
			if !slices.Contains(missing, f.Product) {
				missing = append(missing, f.Product)
				fmt.Fprintf(w, "rlsim: warning: this build has no model of %s, so compare --import cannot run %s (%s) yet\n", f.Product, f.Spec(), f.At)
			}
			continue
		}
		if _, err := algorithms.Parse(f.Spec()); err != nil {
			fmt.Fprintf(w, "rlsim: warning: %s: %s: %v\n", f.At, f.Spec(), err)
		}
	}
}

// renderImportTable writes what a configuration sets for a person: each location with
// its limits, the warnings, and the scenario sections.
func renderImportTable(w io.Writer, r *gateway.Result) {
	groups := r.Groups()
	name := filepath.Base(r.File)
	fmt.Fprintf(w, "%s (%s): %s at %s\n", name, r.Format, plural(len(r.Found), "limit"), plural(len(groups), "location"))
	// The columns: the spec, the key, the configuration's words for it, the limit's name
	// and the line that applies it (JSON has the lines that define it too).
	var rows [][][5]string
	var widths [4]int
	for _, g := range groups {
		var rs [][5]string
		for _, f := range g.Found {
			key := f.Key
			if key == "" {
				key = "no key"
			}
			x := [5]string{f.Spec(), key, f.KeySource, f.Name, f.At.String()}
			for i := range widths {
				widths[i] = max(widths[i], len(x[i]))
			}
			rs = append(rs, x)
		}
		rows = append(rows, rs)
	}
	for i, g := range groups {
		fmt.Fprintln(w)
		if g.Layered() {
			fmt.Fprintf(w, "%s: every limit must admit\n", g.Location)
		} else {
			fmt.Fprintln(w, g.Location)
		}
		for _, x := range rows[i] {
			fmt.Fprintf(w, "  %-*s  %-*s  %-*s  %-*s  %s\n", widths[0], x[0], widths[1], x[1], widths[2], x[2], widths[3], x[3], x[4])
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(w, "\nnot modelled, or modelled with a difference (%d):\n", len(r.Warnings))
		for _, x := range r.Warnings {
			writeWrapped(w, x.String(), "  ", "      ", 100)
		}
	}
	sections := r.Scenarios()
	if len(sections) == 0 {
		return
	}
	fmt.Fprintf(w, "\nscenario sections, one per location (rlsim compare --import %s runs the specs):\n", name)
	for _, s := range sections {
		fmt.Fprintln(w)
		fmt.Fprint(w, s.YAML)
	}
}

// writeWrapped writes text in lines of at most width columns, the first indented by
// first and the rest by rest; a word longer than a line gets a line of its own.
func writeWrapped(w io.Writer, text, first, rest string, width int) {
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len(line)+1+len(word) > width {
			fmt.Fprintln(w, line)
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

type importJSON struct {
	File      string           `json:"file"`
	Format    string           `json:"format"`
	Locations []importLocation `json:"locations"`
	Warnings  []importWarning  `json:"warnings"`
	Scenarios []importSection  `json:"scenarios"`
}

type importLocation struct {
	Location string        `json:"location"`
	Layered  bool          `json:"layered"`
	Limits   []importLimit `json:"limits"`
}

type importLimit struct {
	Spec      string            `json:"spec"`
	Product   string            `json:"product"`
	Params    map[string]string `json:"params"`
	Key       string            `json:"key"`
	KeySource string            `json:"key_source"`
	Name      string            `json:"name"`
	Status    int               `json:"status,omitempty"`
	Promise   importPromise     `json:"promise"`
	At        string            `json:"at"`
	Defined   string            `json:"defined,omitempty"`
	KeyAt     string            `json:"key_at,omitempty"`
}

type importPromise struct {
	Limit  int64  `json:"limit"`
	Window string `json:"window"`
	Burst  int64  `json:"burst,omitempty"`
}

type importWarning struct {
	At      string `json:"at"`
	Message string `json:"message"`
}

type importSection struct {
	Location string `json:"location"`
	YAML     string `json:"yaml"`
}

func importJSONOf(r *gateway.Result) importJSON {
	out := importJSON{File: filepath.Base(r.File), Format: r.Format, Locations: []importLocation{}, Warnings: []importWarning{}, Scenarios: []importSection{}}
	for _, g := range r.Groups() {
		loc := importLocation{Location: g.Location, Layered: g.Layered()}
		for _, f := range g.Found {
			params := map[string]string{}
			for _, p := range f.Params {
				params[p.Name] = p.Value
			}
			loc.Limits = append(loc.Limits, importLimit{
				Spec: f.Spec(), Product: f.Product, Params: params, Key: f.Key, KeySource: f.KeySource,
				Name: f.Name, Status: f.Status, At: f.At.String(), Defined: f.Defined.String(), KeyAt: f.KeyAt.String(),
				Promise: importPromise{Limit: f.Promise.Limit, Window: f.Promise.Window.String(), Burst: f.Promise.Burst},
			})
		}
		out.Locations = append(out.Locations, loc)
	}
	for _, x := range r.Warnings {
		out.Warnings = append(out.Warnings, importWarning{At: x.At.String(), Message: x.Msg})
	}
	for _, s := range r.Scenarios() {
		out.Scenarios = append(out.Scenarios, importSection{Location: s.Location, YAML: s.YAML})
	}
	return out
}

// importFlags are --import and --config-format of the commands that run what a gateway's
// configuration sets beside the built-in algorithms.
type importFlags struct {
	file, format string
}

// importRunUsage is --import's help on the commands that key requests.
const importRunUsage = "also run the rate limits of a gateway's configuration (nginx.conf, haproxy.cfg, Envoy, Kong, Traefik; see rlsim import), keyed as it keys them unless --key is given"

func (f *importFlags) add(c *cobra.Command, usage string) {
	fl := c.Flags()
	fl.StringVar(&f.file, "import", "", usage)
	fl.Var(configFormatValue(&f.format), "config-format", "the format of --import's file: "+orList(gateway.FormatNames())+" (default: from its name and content)")
}

func (f *importFlags) check() error {
	if f.format != "" && f.file == "" {
		return usagef("--config-format: names the format of --import's file, and no --import is given")
	}
	return nil
}

// args are the flags that bring the same configuration again, for a report's command.
func (f *importFlags) args() []string {
	if f.file == "" {
		return nil
	}
	file := f.file
	if strings.ContainsAny(file, " \t'\"") {
		file = strconv.Quote(file)
	}
	out := []string{"--import", file}
	if f.format != "" {
		out = append(out, "--config-format", f.format)
	}
	return out
}

// imported is what --import brings to a run: the specs of its limits (canonical, in
// order) and the key they count on.
type imported struct {
	specs []string
	key   string
}

// load reads --import's configuration (nothing without one) and checks that this build
// can run every limit it sets. Its warnings, and how the run uses what it found, go to
// stderr.
func (f *importFlags) load(stderr io.Writer) (*imported, error) {
	if f.file == "" {
		return &imported{}, nil
	}
	r, err := readConfig(f.file, f.format)
	if err != nil {
		return nil, fmt.Errorf("--import: %w", err)
	}
	if len(r.Found) == 0 {
		return nil, fmt.Errorf("--import %s: the configuration sets no rate limit rlsim models (rlsim import %s says what it holds)", f.file, f.file)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(stderr, "rlsim: warning: --import: %s\n", w)
	}
	out := &imported{}
	for _, x := range r.Found {
		spec, err := algorithms.Parse(x.Spec())
		switch {
		case errors.Is(err, algorithms.ErrUnknown):
			return nil, fmt.Errorf("--import %s: %s: this build has no model of %s%s", x.At, x.Spec(), x.Product, productModels())
		case err != nil:
			return nil, fmt.Errorf("--import %s: %v", x.At, err)
		}
		if !slices.Contains(out.specs, spec.Text) {
			out.specs = append(out.specs, spec.Text)
		}
	}
	for _, g := range r.Groups() {
		if g.Layered() {
			fmt.Fprintf(stderr, "rlsim: warning: --import: %s: %d limits must all admit each request there; they run as separate algorithms, each alone\n", g.Location, len(g.Found))
		}
	}
	keys := r.Keys()
	if len(keys) > 0 {
		out.key = keys[0]
	} else {
		fmt.Fprintf(stderr, "rlsim: warning: --import: no limit counts on a key rlsim has; the run keys as each scenario does\n")
	}
	if len(keys) > 1 {
		fmt.Fprintf(stderr, "rlsim: warning: --import: the limits count on %s; the run keys every request on %s (--key chooses)\n", strings.Join(keys, ", "), keys[0])
	}
	return out, nil
}

// productModels lists the products this build has models of, for an error.
func productModels() string {
	var names []string
	for _, k := range algorithms.Kinds() {
		if len(k.Params) > 0 {
			names = append(names, k.Name)
		}
	}
	if len(names) == 0 {
		return " (it has no model of a product)"
	}
	return " (it has models of " + strings.Join(names, ", ") + ")"
}

// withImported returns specs with the imported ones added after them, each once.
func withImported(specs []string, imp *imported) []string {
	out := slices.Clone(specs)
	for _, s := range imp.specs {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
