package gateway_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/gateway"
)

// The fixture covers what the real-limiter tests run HAProxy with: gt and ge, and two
// periods (10 s in the frontend's own table, 1 m in a table of its own).
func TestHAProxyFixture(t *testing.T) {
	r, err := gateway.Read("testdata/haproxy/haproxy.cfg", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"frontend api | haproxy:period=10s gt=20 | ip | haproxy.cfg:20",
		"frontend api | haproxy:period=1m ge=300 | ip | haproxy.cfg:21",
		"frontend partners | haproxy:period=1m gt=600 | api-key | haproxy.cfg:28",
	}
	if got := summary(r); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	f := r.Found[1]
	if f.Name != "per_minute" || f.Defined.String() != "haproxy.cfg:33" || f.KeyAt.String() != "haproxy.cfg:18" || f.Status != 429 ||
		f.Promise != (gateway.Promise{Limit: 299, Window: time.Minute}) {
		t.Errorf("the per-minute limit: %+v", f)
	}
	if g := r.Groups(); len(g) != 2 || !g[0].Layered() || g[1].Layered() {
		t.Errorf("groups %+v", g)
	}
}

const haHead = "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend fe\n    bind 127.0.0.1:1\n"

func TestHAProxyConditions(t *testing.T) {
	table := "    stick-table type ip size 1k expire 30s store http_req_rate(10s)\n    http-request track-sc0 src\n"
	tests := []struct {
		rules   string
		want    []string // specs
		warning string
	}{
		{"    http-request deny if { sc_http_req_rate(0) gt 20 }\n", []string{"haproxy:period=10s gt=20"}, ""},
		{"    http-request deny if { sc_http_req_rate(0) ge 20 }\n", []string{"haproxy:period=10s ge=20"}, ""},
		{"    http-request deny if { sc0_http_req_rate gt 7 }\n", []string{"haproxy:period=10s gt=7"}, ""},
		{"    http-request deny if { sc0_http_req_rate() -m int gt 7 }\n", []string{"haproxy:period=10s gt=7"}, ""},
		{"    acl abuse sc0_http_req_rate 21:\n    http-request deny if abuse\n", []string{"haproxy:period=10s ge=21"}, ""},
		{"    acl abuse sc_http_req_rate(0) gt 5\n    http-request reject if abuse\n", []string{"haproxy:period=10s gt=5"}, ""},
		{"    http-request deny unless { sc_http_req_rate(0) le 20 }\n", []string{"haproxy:period=10s gt=20"}, ""},
		{"    acl ok sc_http_req_rate(0) lt 20\n    http-request deny if !ok\n", []string{"haproxy:period=10s ge=20"}, ""},
		{"    http-request deny if { sc_http_req_rate(0) gt 20 } || { sc_http_req_rate(0) ge 50 }\n", []string{"haproxy:period=10s gt=20", "haproxy:period=10s ge=50"}, ""},
		{"    http-request return status 429 if { sc_http_req_rate(0) gt 20 }\n", []string{"haproxy:period=10s gt=20"}, ""},
		{"    http-request tarpit if { sc_http_req_rate(0) gt 20 }\n", []string{"haproxy:period=10s gt=20"}, "tarpit refuses by holding"},
		{"    http-request deny if { sc_http_req_rate(0) gt 20 } METH_POST\n", []string{"haproxy:period=10s gt=20"}, "holds only with METH_POST as well"},
		{"    http-request deny if { sc_http_req_rate(0) eq 20 }\n", nil, "refuses when the rate is eq 20"},
		{"    http-request deny if { sc_http_req_rate(0) gt lots }\n", nil, "not a whole number"},
		{"    http-request deny if { sc_http_req_rate(0) 10:20 }\n", nil, `compared as "10:20"`},
		{"    http-request deny if !{ sc_http_req_rate(0) gt 20 } METH_GET\n", nil, "a negated rate test inside a larger condition"},
		{"    http-request deny if { sc_http_err_rate(0) gt 20 }\n", nil, "sc_http_err_rate(0) is not a request rate"},
		{"    http-request deny if { src_http_req_rate gt 20 }\n", nil, "src_http_req_rate reads the table without counting"},
		{"    http-request deny if { sc_http_req_rate(1) gt 20 }\n", nil, "sc1 is filled by no track-sc1"},
		{"    http-request deny if { sc_http_req_rate(0) ge 1 }\n", nil, "refuses every request"},
		{"    acl abuse sc_http_req_rate(0) gt 5\n    acl abuse sc_http_req_rate(0) gt 9\n    http-request deny if abuse\n", nil, "defined on 2 lines"},
		{"    http-request deny if { sc_http_req_rate(0,other) gt 20 }\n", nil, "sc0 tracks into table other, which no stick-table defines"},
		{"    http-request allow if { sc_http_req_rate(0) gt 20 }\n", nil, ""},
		{"    http-request deny\n", nil, ""},
	}
	for _, tt := range tests {
		r, err := parse(t, "haproxy.cfg", "haproxy", haHead+table+tt.rules, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.rules, err)
			continue
		}
		var got []string
		for _, f := range r.Found {
			got = append(got, f.Spec())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%sfound %v, want %v (warnings %s)", tt.rules, got, tt.want, warnings(r))
		}
		w := warnings(r)
		if (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
			t.Errorf("%swarnings %q, want one with %q", tt.rules, w, tt.warning)
		}
	}
}

func TestHAProxyOrderAndTables(t *testing.T) {
	// The deny rule runs before the track rule fills the counter, so it never refuses.
	r, err := parse(t, "haproxy.cfg", "haproxy", haHead+
		"    stick-table type ip size 1k store http_req_rate(10s)\n    http-request deny if { sc_http_req_rate(0) gt 10 }\n    http-request track-sc0 src\n", nil)
	if err != nil || len(r.Found) != 0 || !strings.Contains(warnings(r), "haproxy.cfg:9: this rule runs before track-sc0 at haproxy.cfg:10 fills the counter") {
		t.Errorf("deny before track: %v %v %s", summary(r), err, warnings(r))
	}
	// A connection-level track runs before every http-request rule, whatever the lines.
	r, err = parse(t, "haproxy.cfg", "haproxy", haHead+
		"    stick-table type ip size 1k store http_req_rate(1m)\n    http-request deny if { sc_http_req_rate(0) gt 10 }\n    tcp-request connection track-sc0 src\n", nil)
	if err != nil || !slices.Equal(summary(r), []string{"frontend fe | haproxy:period=1m gt=10 | ip | haproxy.cfg:9"}) {
		t.Errorf("tcp track: %v %v", summary(r), err)
	}
	// A backend's rule reads the counter its frontend tracks, from a peers table.
	conf := "peers mesh\n    peer a 127.0.0.1:1\n    table rates type ip size 1k store http_req_rate(30s)\n" + haHead +
		"    http-request track-sc2 src table mesh/rates\n    default_backend be\nbackend be\n    http-request deny if { sc2_http_req_rate gt 3 }\n    server s 127.0.0.1:2\n"
	r, err = parse(t, "haproxy.cfg", "haproxy", strings.ReplaceAll(conf, "mesh/rates", "rates"), nil)
	if err != nil || !slices.Equal(summary(r), []string{"backend be | haproxy:period=30s gt=3 | ip | haproxy.cfg:14"}) {
		t.Errorf("backend: %v %v %s", summary(r), err, warnings(r))
	}
	// A table without http_req_rate makes the fetch fail.
	r, err = parse(t, "haproxy.cfg", "haproxy", haHead+
		"    stick-table type ip size 1k store conn_cur\n    http-request track-sc0 src\n    http-request deny if { sc_http_req_rate(0) gt 10 }\n", nil)
	if err != nil || len(r.Found) != 0 || !strings.Contains(warnings(r), "stick-table fe stores no http_req_rate") {
		t.Errorf("no rate: %v %v %s", summary(r), err, warnings(r))
	}
	// A conditional track counts only some requests.
	r, err = parse(t, "haproxy.cfg", "haproxy", haHead+
		"    stick-table type ip size 1k store http_req_rate(10s)\n    http-request track-sc0 src if METH_POST\n    http-request deny if { sc_http_req_rate(0) gt 10 }\n", nil)
	if err != nil || len(r.Found) != 1 || !strings.Contains(warnings(r), `track-sc0 tracks only the requests its condition "METH_POST" selects`) {
		t.Errorf("conditional track: %v %v %s", summary(r), err, warnings(r))
	}
}

func TestHAProxyKeys(t *testing.T) {
	tests := []struct{ sample, want, warning string }{
		{"src", "ip", ""},
		{"src,ipmask(32,64)", "ipv6/64", ""},
		{"src,ipmask(24)", "", "no key for this sample"},
		{"req.hdr(x-forwarded-for)", "xff:1", ""},
		{"hdr(X-Forwarded-For,-2)", "xff:2", ""},
		{"req.hdr_ip(x-forwarded-for,-3)", "xff:3", ""},
		{"req.hdr(x-forwarded-for,1)", "xff-leftmost", "the one the client wrote itself"},
		{"req.hdr(x-forwarded-for,2)", "", "address 2 from the left"},
		{"req.fhdr(x-forwarded-for)", "xff-leftmost", "the whole header"},
		{"req.hdr(x-api-key)", "api-key", "a request without the header is not tracked"},
		{"req.hdr(X-User-Id)", "user", "a request without the header"},
		{"req.hdr(x-colour)", "", "the x-colour header is no identity"},
		{"path", "route", ""},
		{"base", "route", "base holds more than the path"},
		{"req.cook(session)", "", "no key for this sample"},
	}
	for _, tt := range tests {
		conf := haHead + "    stick-table type string len 64 size 1k store http_req_rate(10s)\n    http-request track-sc0 " + tt.sample + "\n    http-request deny if { sc_http_req_rate(0) gt 10 }\n"
		r, err := parse(t, "haproxy.cfg", "haproxy", conf, nil)
		if err != nil || len(r.Found) != 1 {
			t.Errorf("%s: %v %v", tt.sample, summary(r), err)
			continue
		}
		if r.Found[0].Key != tt.want || r.Found[0].KeySource != tt.sample {
			t.Errorf("%s: key %q from %q, want %q", tt.sample, r.Found[0].Key, r.Found[0].KeySource, tt.want)
		}
		w := warnings(r)
		if (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
			t.Errorf("%s: warnings %q, want one with %q", tt.sample, w, tt.warning)
		}
	}
}

// haproxyErrors are configurations HAProxy refuses, with rlsim's message (lines after
// haHead, which takes 7).
var haproxyErrors = []struct{ lines, want string }{
	{"    http-request deny if { sc_http_req_rate(0) gt \"20 }\n", "haproxy.cfg:8:51: unmatched quote"},
	{"    stick-table size 1k store http_req_rate(10s)\n", "haproxy.cfg:8: stick-table: missing type"},
	{"    stick-table type ip store http_req_rate(10s)\n", "haproxy.cfg:8: stick-table: missing size"},
	{"    stick-table type address size 1k\n", `haproxy.cfg:8: stick-table: unknown type "address"`},
	{"    stick-table type ip size 1k store http_req_rate(ten)\n", "haproxy.cfg:8:39: stick-table: http_req_rate(ten): the period must be a time"},
	{"    stick-table type ip size 1k colour red\n", `haproxy.cfg:8:33: stick-table: unknown argument "colour"`},
	{"    stick-table type ip size 1k\n    stick-table type ip size 2k\n", "haproxy.cfg:9: frontend fe has a second stick-table (the first at haproxy.cfg:8)"},
	{"    http-request track-sc0\n", "haproxy.cfg:8: track-sc0 needs a sample to track"},
	{"    http-request deny if { sc_http_req_rate(0) gt 1\n", "haproxy.cfg:8:26: an anonymous acl opened with { is never closed"},
	{"    acl x\n", "haproxy.cfg:8: acl needs a name and a criterion"},
}

func TestHAProxyErrorsNameTheLine(t *testing.T) {
	for _, tt := range haproxyErrors {
		_, err := parse(t, "haproxy.cfg", "haproxy", haHead+tt.lines, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "/etc/x/"+tt.want) {
			t.Errorf("%q:\n error %v\n want /etc/x/%s…", tt.lines, err, tt.want)
		}
	}
	_, err := parse(t, "haproxy.cfg", "haproxy", "frontend\n bind :1\n", nil)
	if err == nil || err.Error() != "/etc/x/haproxy.cfg:1: frontend needs a name" {
		t.Errorf("a frontend without a name: %v", err)
	}
}

func TestHAProxyReadsLikeHAProxy(t *testing.T) {
	conf := haHead + `    stick-table type string len 32 size 1k store "http_req_rate(1m)" # comment
    http-request track-sc0 req.hdr(x-api-key)   # key per client
    acl "too fast" sc_http_req_rate(0) gt 15
    acl quoted\ name sc_http_req_rate(0) gt 25
    http-request deny deny_status 429 if "too fast"
    http-request deny if quoted\ name
    http-request deny if { sc_http_req_rate(0) gt 35 } # and '# "quoted' words
`
	r, err := parse(t, "haproxy.cfg", "haproxy", conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"frontend fe | haproxy:period=1m gt=15 | api-key | haproxy.cfg:12",
		"frontend fe | haproxy:period=1m gt=25 | api-key | haproxy.cfg:13",
		"frontend fe | haproxy:period=1m gt=35 | api-key | haproxy.cfg:14",
	}
	if got := summary(r); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The real HAProxy refuses every configuration rlsim refuses, and accepts the fixture.
func TestHAProxyAgreesWithHAProxy(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not installed")
	}
	dir := t.TempDir()
	check := func(conf string) error {
		path := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "-c", "-q", "-f", path).CombinedOutput()
		if err != nil {
			return &exec.ExitError{Stderr: out}
		}
		return nil
	}
	if err := check(haHead); err != nil {
		t.Skipf("haproxy -c does not run here: %s", err.(*exec.ExitError).Stderr)
	}
	for _, tt := range haproxyErrors {
		if err := check(haHead + tt.lines); err == nil {
			t.Errorf("haproxy accepts %q, which rlsim refuses with %s", tt.lines, tt.want)
		}
	}
	data, err := os.ReadFile("testdata/haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	if err := check(string(data)); err != nil {
		t.Errorf("haproxy refuses the fixture: %s", err.(*exec.ExitError).Stderr)
	}
}
