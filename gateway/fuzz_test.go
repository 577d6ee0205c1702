package gateway_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/traffic"
)

// fuzzFormat reads data as format and holds the result to what every reader promises
// whatever the input: no panic; an error is one *Error naming the file, at a line the
// file has; every limit a spec in the syntax of --algorithms, keyed on a key rlsim has
// or none, at a line of the file.
func fuzzFormat(t *testing.T, name, format string, data []byte) {
	r, err := gateway.Parse(&gateway.Source{Path: "/fuzz/" + name, Name: name, Data: data, Files: mapFiles{}}, format)
	lines := strings.Count(string(data), "\n") + 1
	if err != nil {
		var ge *gateway.Error
		if !errors.As(err, &ge) {
			t.Fatalf("error %v is not a *gateway.Error", err)
		}
		if ge.File != "/fuzz/"+name || ge.Line < 0 || ge.Line > lines || strings.ContainsAny(err.Error(), "\n\r") {
			t.Fatalf("error %q: file %s line %d of %d", err, ge.File, ge.Line, lines)
		}
		return
	}
	for _, f := range r.Found {
		spec := f.Spec()
		if !specRE.MatchString(spec) {
			t.Fatalf("spec %q", spec)
		}
		if f.Key != "" {
			if _, err := traffic.ParseKeyer(f.Key); err != nil {
				t.Fatalf("key %q: %v", f.Key, err)
			}
		}
		if f.At.Line < 1 || f.At.Line > lines || f.Promise.Limit < 1 || f.Promise.Window <= 0 {
			t.Fatalf("%s at %s of %d lines, promise %+v", spec, f.At, lines, f.Promise)
		}
	}
	for _, w := range r.Warnings {
		if w.At.Line > lines {
			t.Fatalf("warning %q past the end", w)
		}
	}
	for _, s := range r.Scenarios() {
		if s.YAML == "" {
			t.Fatal("an empty scenario section")
		}
	}
}

func seed(f *testing.F, paths ...string) {
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func FuzzNginx(f *testing.F) {
	seed(f, "testdata/nginx/nginx.conf", "testdata/nginx/conf.d/static.conf")
	for _, tt := range nginxErrors {
		f.Add([]byte("http {\n" + tt.conf + "\n}"))
	}
	for _, tt := range nginxSyntaxErrors {
		f.Add([]byte(tt.conf))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, "nginx.conf", "nginx", data) })
}

func FuzzHAProxy(f *testing.F) {
	seed(f, "testdata/haproxy/haproxy.cfg")
	for _, tt := range haproxyErrors {
		f.Add([]byte(haHead + tt.lines))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, "haproxy.cfg", "haproxy", data) })
}

// FuzzYAMLFormats reads each input as Envoy, Kong and Traefik YAML.
func FuzzYAMLFormats(f *testing.F) {
	seed(f, "testdata/envoy/envoy.yaml", "testdata/kong/kong.yml", "testdata/traefik/dynamic.yml", "testdata/traefik/middleware-crd.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []string{"envoy", "kong", "traefik"} {
			fuzzFormat(t, "config.yaml", format, data)
		}
	})
}

func FuzzTraefikTOML(f *testing.F) {
	seed(f, "testdata/traefik/dynamic.toml")
	f.Add([]byte("a = [1, [2, {b = \"c\\u00e9\"}]]\n[[x.y]]\nz = 'w'\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, "dynamic.toml", "traefik", data) })
}
