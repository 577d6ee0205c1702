package gateway_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
)

// fixtures are every configuration under testdata/FORMAT/ that a format reads whole:
// the contract test runs each through its format.
func fixtures(t *testing.T, format string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join("testdata", format), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.Contains(path, string(filepath.Separator)+"conf.d"+string(filepath.Separator)) || strings.HasSuffix(path, "mime.types") {
			return nil
		}
		out = append(out, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var specRE = regexp.MustCompile(`^[a-z][a-z0-9-]*(:[A-Za-z_]+(=[^\s,]+)?( [A-Za-z_]+(=[^\s,]+)?)*)?$`)

// Every registered format reads its fixtures: each is detected as that format from its
// name and content, and every limit it finds keeps the contract — a spec in the syntax
// of --algorithms (no comma, which separates specs), a key rlsim has or a warning that
// says why there is none, a line of the file, a location and a promise.
func TestEveryFormatKeepsTheContract(t *testing.T) {
	if len(gateway.Formats()) < 5 {
		t.Fatalf("formats %v: want nginx, haproxy, envoy, kong and traefik at least", gateway.FormatNames())
	}
	for _, f := range gateway.Formats() {
		t.Run(f.Name, func(t *testing.T) {
			if f.Summary == "" {
				t.Error("no summary")
			}
			files := fixtures(t, f.Name)
			if len(files) == 0 {
				t.Fatalf("no fixture under testdata/%s", f.Name)
			}
			for _, path := range files {
				checkFile(t, path, f.Name)
			}
		})
	}
	// The examples the documentation reads keep it too.
	examples, err := filepath.Glob("../examples/import/*")
	if err != nil || len(examples) < 4 {
		t.Fatalf("examples/import holds %v (%v)", examples, err)
	}
	for _, path := range examples {
		format := map[string]string{".conf": "nginx", ".cfg": "haproxy", ".yml": "kong"}[filepath.Ext(path)]
		if strings.HasPrefix(filepath.Base(path), "traefik") {
			format = "traefik"
		}
		checkFile(t, path, format)
	}
}

func checkFile(t *testing.T, path, format string) {
	t.Helper()
	r, err := gateway.Read(path, "")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if r.Format != format {
		t.Errorf("%s: detected as %s, want %s", path, r.Format, format)
	}
	if len(r.Found) == 0 {
		t.Errorf("%s: found no limit", path)
	}
	lines := lineCounts(t, path)
	for _, x := range r.Found {
		checkFound(t, path, x, r, lines)
	}
	for _, w := range r.Warnings {
		if w.At.Line < 1 || w.At.Line > lines[w.At.File] {
			t.Errorf("%s: warning %q at a line the file does not have", path, w)
		}
	}
	for _, s := range r.Scenarios() {
		checkSection(t, path, s)
	}
}

// lineCounts counts the lines of the file given and of those beside it, by the name
// findings give them.
func lineCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	dir := filepath.Dir(path)
	out := map[string]int{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = strings.Count(string(data), "\n") + 1
		return nil
	})
	return out
}

func checkFound(t *testing.T, path string, x gateway.Found, r *gateway.Result, lines map[string]int) {
	t.Helper()
	spec := x.Spec()
	if !specRE.MatchString(spec) || !strings.HasPrefix(spec, x.Product+":") {
		t.Errorf("%s: spec %q is not PRODUCT:param=value flag …", path, spec)
	}
	if x.Key != "" {
		if _, err := traffic.ParseKeyer(x.Key); err != nil {
			t.Errorf("%s: %s: key %q: %v", path, spec, x.Key, err)
		}
	} else if len(r.Warnings) == 0 {
		t.Errorf("%s: %s has no key and no warning says why", path, spec)
	}
	if x.KeySource == "" || x.Location == "" || x.Name == "" {
		t.Errorf("%s: %s: key source %q, location %q, name %q: each must be set", path, spec, x.KeySource, x.Location, x.Name)
	}
	for i, at := range []gateway.Place{x.At, x.Defined, x.KeyAt} {
		if i > 0 && at == (gateway.Place{}) {
			continue // no line of its own
		}
		if at.Line < 1 || at.Line > lines[at.File] {
			t.Errorf("%s: %s: place %q is no line of a file there", path, spec, at)
		}
	}
	if x.Promise.Limit < 1 || x.Promise.Window <= 0 || x.Promise.Burst < 0 {
		t.Errorf("%s: %s: promise %+v", path, spec, x.Promise)
	}
	if k := algorithms.Lookup(x.Product); k != nil {
		if _, err := algorithms.Parse(spec); err != nil {
			t.Errorf("%s: the %s model refuses %q: %v", path, x.Product, spec, err)
		}
	}
}

// checkSection parses a scenario section as a scenario file would hold it. A spec whose
// product this build has no model of is left out of the algorithms line, so that the
// rest of the section (policy, key, layers) is still checked.
func checkSection(t *testing.T, path string, s gateway.Section) {
	t.Helper()
	var kept []string
	for _, line := range strings.Split(s.YAML, "\n") {
		if strings.HasPrefix(line, "algorithms: ['") {
			spec := strings.TrimSuffix(strings.TrimPrefix(line, "algorithms: ['"), "']")
			if algorithms.Lookup(spec) == nil {
				continue
			}
		}
		kept = append(kept, line)
	}
	body := "name: imported\nduration: 10s\n" + strings.Join(kept, "\n") +
		"traffic:\n  - nat-crowd: {users: 2, rate_per_user: 1}\n"
	if !strings.Contains(s.YAML, "policy:") && !strings.Contains(s.YAML, "limits:") {
		t.Errorf("%s: section for %s has neither policy nor limits:\n%s", path, s.Location, s.YAML)
	}
	if _, err := scenario.Parse("section.yaml", []byte(body)); err != nil {
		t.Errorf("%s: the scenario section for %s does not parse: %v\n%s", path, s.Location, err, body)
	}
}

func TestDetectNamesTheFormatOrAsks(t *testing.T) {
	tests := []struct {
		name, data, format, want, err string
	}{
		{"nginx.conf", "http { limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s; }", "", "nginx", ""},
		{"site.conf", "server { listen 80; }", "", "nginx", ""},
		{"haproxy.cfg", "frontend www\n bind :80\n", "", "haproxy", ""},
		{"lb.conf", "global\n maxconn 10\nfrontend www\n bind :80\n", "", "haproxy", ""},
		{"envoy.yaml", "static_resources: {}\n", "", "envoy", ""},
		{"kong.yml", "_format_version: \"3.0\"\n", "", "kong", ""},
		{"dynamic.toml", "[http.middlewares.a.rateLimit]\naverage = 1\n", "", "traefik", ""},
		{"x.yaml", "http:\n  middlewares:\n    a:\n      rateLimit: {average: 1}\n", "", "traefik", ""},
		{"notes.txt", "hello", "", "", "cannot tell the configuration format of this file; name it with --config-format envoy|haproxy|kong|nginx|traefik"},
		{"notes.txt", "hello", "kong", "kong", ""},
		{"notes.txt", "hello", "caddy", "", `configuration format "caddy" is not one rlsim reads (want envoy, haproxy, kong, nginx, traefik)`},
		{"a.yaml", "x: 1\n", "", "", "the file could be envoy or kong or traefik: name its configuration format with --config-format"},
		{"README.md", "limit_req zone=a; location / {", "", "", "cannot tell the configuration format of this file; name it with --config-format envoy|haproxy|kong|nginx|traefik"},
		{"README.md", "limit_req zone=a;", "nginx", "nginx", ""},
	}
	for _, tt := range tests {
		f, err := gateway.Detect(tt.name, []byte(tt.data), tt.format)
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err || !errors.Is(err, gateway.ErrFormat) {
				t.Errorf("%s %q: error %v, want %q wrapping ErrFormat", tt.name, tt.data, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case f.Name != tt.want:
			t.Errorf("%s %q: detected %s, want %s", tt.name, tt.data, f.Name, tt.want)
		}
	}
}

func TestReadNamesAMissingFile(t *testing.T) {
	_, err := gateway.Read("testdata/no-such.conf", "")
	if err == nil || err.Error() != "testdata/no-such.conf: no such file or directory" {
		t.Errorf("error %v", err)
	}
}

func TestRegisterRefusesASecondFormatOfTheSameName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second nginx format registered without a panic")
		}
	}()
	gateway.Register(gateway.Format{Name: "nginx", Sniff: func(string, []byte) int { return 0 }, Parse: func(*gateway.Source) (*gateway.Result, error) { return nil, nil }})
}

// parse reads data as the file name in format, with includes read from files (name →
// contents; paths relative to the file's folder).
func parse(t *testing.T, name, format, data string, files map[string]string) (*gateway.Result, error) {
	t.Helper()
	return gateway.Parse(&gateway.Source{Path: "/etc/x/" + name, Name: name, Data: []byte(data), Files: mapFiles(files)}, format)
}

// mapFiles are files in memory under /etc/x/.
type mapFiles map[string]string

func (m mapFiles) ReadFile(path string) ([]byte, error) {
	rel, ok := strings.CutPrefix(path, "/etc/x/")
	if v, found := m[rel]; ok && found {
		return []byte(v), nil
	}
	return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
}

func (m mapFiles) Glob(pattern string) ([]string, error) {
	var out []string
	for name := range m {
		if ok, _ := filepath.Match(pattern, "/etc/x/"+name); ok {
			out = append(out, "/etc/x/"+name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// summary is one line per limit: location | spec | key | at.
func summary(r *gateway.Result) []string {
	var out []string
	for _, f := range r.Found {
		out = append(out, f.Location+" | "+f.Spec()+" | "+f.Key+" | "+f.At.String())
	}
	return out
}

func warnings(r *gateway.Result) string {
	var out []string
	for _, w := range r.Warnings {
		out = append(out, w.String())
	}
	return strings.Join(out, "\n")
}
