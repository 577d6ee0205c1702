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

// The fixture covers what the real-limiter tests run nginx with: no burst, burst,
// burst+nodelay, burst+delay=, a rate in r/m, two zones on one location, and an include.
func TestNginxFixture(t *testing.T) {
	r, err := gateway.Read("testdata/nginx/nginx.conf", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"server api.example.com | nginx:rate=10r/s | ip | nginx.conf:27",
		"server api.example.com, location /search | nginx:rate=10r/s burst=20 | ip | nginx.conf:34",
		"server api.example.com, location /v1/ | nginx:rate=10r/s burst=20 nodelay | ip | nginx.conf:40",
		"server api.example.com, location /v1/ | nginx:rate=600r/m burst=50 | api-key | nginx.conf:41",
		"server api.example.com, location = /login | nginx:rate=30r/m burst=5 delay=2 | ip | nginx.conf:46",
		"server static.example.com, location /img/ | nginx:rate=50r/s burst=100 nodelay | ip | conf.d/static.conf:8",
	}
	if got := summary(r); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	f := r.Found[3]
	if f.Name != "perkey" || f.Defined.String() != "nginx.conf:18" || f.KeySource != "$http_x_api_key" || f.Status != 429 ||
		f.Promise != (gateway.Promise{Limit: 600, Window: time.Minute, Burst: 51}) {
		t.Errorf("the perkey limit: %+v", f)
	}
	groups := r.Groups()
	if len(groups) != 5 || !groups[2].Layered() || groups[1].Layered() {
		t.Errorf("groups: %+v", groups)
	}
	if w := warnings(r); w != "nginx.conf:18: zone perkey keys on the x-api-key header: requests without it have an empty key, which nginx does not limit; rlsim limits every request by its api-key" {
		t.Errorf("warnings:\n%s", w)
	}
}

// A block inherits the limit_req lines around it only when it has none of its own
// (ngx_http_limit_req_merge_conf), so each set of lines is one location, named where
// the lines are; limit_req_status is inherited on its own.
func TestNginxInheritance(t *testing.T) {
	conf := `
http {
    limit_req_zone $binary_remote_addr zone=a:1m rate=1r/s;
    limit_req_zone $binary_remote_addr zone=b:1m rate=2r/s;
    limit_req zone=a;
    limit_req_status 503;
    server {
        server_name one;
        location / { }
        location /x {
            limit_req zone=b;
            limit_req_status 429;
            location /x/y { }
            location /x/z { limit_req zone=a burst=3; limit_req zone=b; }
        }
    }
    server {
        server_name _ two;
        limit_req zone=b burst=1;
    }
    server {
        listen 81;
        limit_req zone=b burst=2;
    }
}`
	r, err := parse(t, "nginx.conf", "nginx", conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"http | nginx:rate=1r/s | ip | nginx.conf:5",
		"server one, location /x | nginx:rate=2r/s | ip | nginx.conf:11",
		"server one, location /x, location /x/z | nginx:rate=1r/s burst=3 | ip | nginx.conf:14",
		"server one, location /x, location /x/z | nginx:rate=2r/s | ip | nginx.conf:14",
		"server two | nginx:rate=2r/s burst=1 | ip | nginx.conf:19",
		"server at nginx.conf:21 | nginx:rate=2r/s burst=2 | ip | nginx.conf:23",
	}
	if got := summary(r); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var statuses []int
	for _, f := range r.Found {
		statuses = append(statuses, f.Status)
	}
	if !slices.Equal(statuses, []int{503, 429, 429, 429, 503, 503}) {
		t.Errorf("statuses %v", statuses)
	}
}

func TestNginxKeys(t *testing.T) {
	tests := []struct {
		key, extra, want, warning string
	}{
		{"$binary_remote_addr", "", "ip", ""},
		{"$remote_addr", "", "ip", ""},
		{"${binary_remote_addr}", "", "ip", ""},
		{"$realip_remote_addr", "real_ip_header X-Forwarded-For;", "ip", ""},
		{"$remote_user", "", "user", "requests without HTTP basic authentication"},
		{"$http_x_forwarded_for", "", "xff-leftmost", "whole X-Forwarded-For header"},
		{"$http_x_api_key", "", "api-key", "requests without it have an empty key"},
		{"$http_x_user_id", "", "user", "requests without it"},
		{"$http_x_tenant", "", "tenant", "requests without it"},
		{"$http_x_account_id", "", "account", "requests without it"},
		{"$http_x_session", "", "", "x-session header, which is no identity"},
		{"$uri", "", "route", ""},
		{"$request_uri", "", "route", "includes the query string"},
		{"$server_name", "", "", "one counter per virtual host"},
		{"$host", "", "", "one counter per virtual host"},
		{"$binary_remote_addr$uri", "", "", "joins several values"},
		{"global", "", "", "the constant \"global\""},
		{"$cookie_session", "", "", "$cookie_session, which rlsim cannot key on"},
		{"$binary_remote_addr", "real_ip_header X-Forwarded-For; set_real_ip_from 10.0.0.0/8;", "xff:1", "the address the last trusted proxy appended"},
		{"$binary_remote_addr", "real_ip_header X-Forwarded-For; real_ip_recursive on;", "xff:1", "rightmost address outside set_real_ip_from"},
		{"$remote_addr", "real_ip_header X-Real-IP;", "ip", "keyed as the peer"},
		{"$limit_key", "geo $limited { default 1; 10.0.0.0/8 0; } map $limited $limit_key { 0 \"\"; 1 $binary_remote_addr; }", "ip", "gives some requests an empty key"},
		{"$limit_key", "map $http_x_tier $limit_key { default $binary_remote_addr; gold $http_x_api_key; }", "", "a choice of values"},
		{"$limit_key", "map $http_x_tier $limit_key { default \"\"; }", "", "leaves empty for every request"},
		{"$k1", "map $a $k1 { default $k2; } map $b $k2 { default $k3; } map $c $k3 { default $k4; } map $d $k4 { default $k5; } map $e $k5 { default $remote_addr; }", "", "rlsim cannot key on"},
	}
	for _, tt := range tests {
		conf := "http { " + tt.extra + " limit_req_zone " + tt.key + " zone=z:1m rate=1r/s; server { location / { limit_req zone=z; } } }"
		r, err := parse(t, "nginx.conf", "nginx", conf, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.key, err)
			continue
		}
		if len(r.Found) != 1 || r.Found[0].Key != tt.want {
			t.Errorf("%s %s: found %v, want key %q", tt.key, tt.extra, summary(r), tt.want)
			continue
		}
		w := warnings(r)
		if (tt.warning == "") != (w == "") || !strings.Contains(w, tt.warning) {
			t.Errorf("%s %s: warnings %q, want one with %q", tt.key, tt.extra, w, tt.warning)
		}
	}
}

func TestNginxWarnsOfWhatItSkips(t *testing.T) {
	conf := `http {
    limit_req_zone $binary_remote_addr zone=a:1m rate=1r/s;
    limit_req_zone $binary_remote_addr zone=unused:1m rate=5;
    limit_conn_zone $binary_remote_addr zone=c:1m;
    server {
        limit_req zone=a;
        limit_req_dry_run on;
        limit_conn c 10;
        limit_rate 100k;
    }
}`
	r, err := parse(t, "nginx.conf", "nginx", conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"nginx.conf:3: rate=5 has no unit; nginx reads it as 5r/s",
		"nginx.conf:4: limit_conn_zone limits concurrent connections, which rlsim does not model: skipped",
		"nginx.conf:8: limit_conn limits concurrent connections, which rlsim does not model: skipped",
		"nginx.conf:9: limit_rate limits bandwidth, not requests: skipped",
		"nginx.conf:7: limit_req_dry_run on: nginx counts the limits of server at nginx.conf:5 but refuses nothing; the specs model them enforcing",
		"nginx.conf:3: zone unused is defined, but no limit_req uses it",
	}
	if got := warnings(r); got != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// nginxErrors are configurations nginx refuses, with the message rlsim gives; each is
// also put to the real nginx when it is installed, which must refuse it too.
var nginxErrors = []struct{ conf, want string }{
	{"limit_req_zone $binary_remote_addr zone=a:10m;", `nginx.conf:1: invalid number of arguments in "limit_req_zone" directive`},
	{"limit_req_zone $binary_remote_addr zone=a rate=1r/s;", `nginx.conf:1: invalid zone size "zone=a"`},
	{"limit_req_zone $binary_remote_addr zone=a:10k rate=1r/s;", `nginx.conf:1: zone "zone=a:10k" is too small`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=0r/s;", `nginx.conf:1: invalid rate "rate=0r/s"`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=5r/h;", `nginx.conf:1: invalid rate "rate=5r/h"`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=1.5r/s;", `nginx.conf:1: invalid rate "rate=1.5r/s"`},
	{"limit_req_zone $binary_remote_addr zone=a:10m foo=1;", `nginx.conf:1: invalid parameter "foo=1"`},
	{"limit_req_zone zone=a:10m rate=1r/s $binary_remote_addr;", `nginx.conf:1: invalid parameter "$binary_remote_addr"`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s;\nlimit_req_zone $remote_addr zone=a:10m rate=1r/s;", `nginx.conf:2: limit_req_zone "a" is already bound to key "$binary_remote_addr" at nginx.conf:1`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s; limit_req zone=a burst=0;", `nginx.conf:1: invalid burst value "burst=0"`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s; limit_req zone=a burst=x;", `nginx.conf:1: invalid burst value "burst=x"`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s; limit_req zone=a delay=0;", `nginx.conf:1: invalid delay value "delay=0"`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s; limit_req zone=a brust=5;", `nginx.conf:1: invalid parameter "brust=5"`},
	{"limit_req burst=5;", `nginx.conf:1: "limit_req" must have "zone" parameter`},
	{"server { location / {\n limit_req zone=nowhere; } }", `nginx.conf:2: limit_req zone=nowhere: no limit_req_zone defines zone "nowhere"`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s; server {\n limit_req zone=a;\n limit_req zone=a burst=2; }", `nginx.conf:3: "limit_req" directive is duplicate: zone a is already limited here at nginx.conf:2`},
	{"limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s; server { location / { if ($x) {\n limit_req zone=a; } } }", `nginx.conf:2: "limit_req" directive is not allowed here`},
	{"server {\n limit_req_zone $binary_remote_addr zone=a:10m rate=1r/s; }", `nginx.conf:2: "limit_req_zone" directive is not allowed here`},
	{"limit_req_status 200;", `nginx.conf:1: limit_req_status: value must be between 400 and 599, got "200"`},
	{"limit_req_dry_run maybe;", `nginx.conf:1: limit_req_dry_run: want "on" or "off", got "maybe"`},
}

// nginxSyntaxErrors are whole files nginx cannot read, with the message rlsim gives.
var nginxSyntaxErrors = []struct{ conf, want string }{
	{"http { server { listen 80 } }", `nginx.conf:1: unexpected "}" (the directive before it lacks its ";")`},
	{"http { server { listen 80; }}}", `nginx.conf:1: unexpected "}"`},
	{"http { server {\n listen 80;\n}\n", `nginx.conf:4: unexpected end of file, expecting "}"`},
	{"http { server { listen \"80\"x; } }", `nginx.conf:1: unexpected 'x' after a quoted word`},
	{"http { server { listen 80 ; ; } }", `nginx.conf:1: unexpected ';'`},
	{"http { server { server_name \"a\n} }\n", `nginx.conf:3: unexpected end of file, expecting ";" or "}"`},
	{"http { server { listen 80", `nginx.conf:1: unexpected end of file, expecting ";" or "}"`},
}

func TestNginxErrorsNameTheLine(t *testing.T) {
	for _, tt := range nginxErrors {
		_, err := parse(t, "nginx.conf", "nginx", "http {\n"+tt.conf+"\n}", nil)
		// The cases are written as lines of http; the wrapper's first line shifts them.
		want := shiftLine(tt.want, 1)
		if err == nil || !strings.HasPrefix(err.Error(), "/etc/x/"+want) {
			t.Errorf("%q:\n error %v\n want /etc/x/%s…", tt.conf, err, want)
		}
	}
	for _, tt := range nginxSyntaxErrors {
		_, err := parse(t, "nginx.conf", "nginx", tt.conf, nil)
		if err == nil || err.Error() != "/etc/x/"+tt.want {
			t.Errorf("%q:\n error %v\n want /etc/x/%s", tt.conf, err, tt.want)
		}
	}
}

// shiftLine adds n to the line of "file:LINE: …" and of every "at file:LINE" in s.
func shiftLine(s string, n int) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "nginx.conf:")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+len("nginx.conf:")])
		s = s[i+len("nginx.conf:"):]
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		line := 0
		for _, c := range s[:j] {
			line = line*10 + int(c-'0')
		}
		b.WriteString(itoa(line + n))
		s = s[j:]
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// The real nginx refuses every configuration rlsim refuses, and accepts the fixture.
func TestNginxAgreesWithNginx(t *testing.T) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed")
	}
	dir := t.TempDir()
	var checkWhole func(string) error
	check := func(http string) error {
		return checkWhole("http {\naccess_log off;\n" + http + "\n}\n")
	}
	checkWhole = func(conf string) error {
		conf = "pid " + filepath.Join(dir, "nginx.pid") + "; error_log stderr; events {}\n" + conf
		path := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "-t", "-q", "-p", dir, "-c", path).CombinedOutput()
		if err != nil {
			return &exec.ExitError{Stderr: out}
		}
		return nil
	}
	if err := check("limit_req_zone $binary_remote_addr zone=ok:1m rate=1r/s; server { listen 127.0.0.1:1; limit_req zone=ok; }"); err != nil {
		t.Skipf("nginx -t does not run here: %s", err.(*exec.ExitError).Stderr)
	}
	for _, tt := range nginxErrors {
		if err := check(tt.conf); err == nil {
			t.Errorf("nginx accepts %q, which rlsim refuses with %s", tt.conf, tt.want)
		}
	}
	for _, tt := range nginxSyntaxErrors {
		if err := checkWhole(tt.conf); err == nil {
			t.Errorf("nginx accepts %q, which rlsim refuses with %s", tt.conf, tt.want)
		}
	}
	data, err := os.ReadFile("testdata/nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	body := string(data)
	body = body[strings.Index(body, "http {")+len("http {") : strings.LastIndex(body, "}")]
	body = strings.ReplaceAll(body, "include conf.d/*.conf;", "include "+filepath.Join(must(filepath.Abs("testdata/nginx")), "conf.d/*.conf")+";")
	body = strings.ReplaceAll(body, "include mime.types;", "")
	body = strings.ReplaceAll(body, "access_log /var/log/nginx/access.log;", "")
	body = strings.ReplaceAll(body, "listen 80;", "listen 127.0.0.1:1;")
	if err := check(body); err != nil {
		t.Errorf("nginx refuses the fixture: %s", err.(*exec.ExitError).Stderr)
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func TestNginxReadsLikeNginx(t *testing.T) {
	conf := `# a comment; with { braces }
http {
    limit_req_zone "$binary_remote_addr" 'zone=quoted:1m' rate=1r/s; # trailing comment
    limit_req_zone ${http_x_api_key} zone=braced:1m rate=2r/s;
    log_format x 'a "b" \' c' "d \"e\"";
    server {
        server_name "static.example.com" ;
        location ~ ^/a\{2\}$ { limit_req zone=quoted; }
        location /b{limit_req zone=braced;}
        location /c#not-a-comment { limit_req zone=quoted burst=2; }
    }
}`
	r, err := parse(t, "nginx.conf", "nginx", conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`server static.example.com, location ~ ^/a\{2\}$ | nginx:rate=1r/s | ip | nginx.conf:8`,
		"server static.example.com, location /b | nginx:rate=2r/s | api-key | nginx.conf:9",
		"server static.example.com, location /c#not-a-comment | nginx:rate=1r/s burst=2 | ip | nginx.conf:10",
	}
	if got := summary(r); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNginxIncludes(t *testing.T) {
	files := map[string]string{
		"zones.conf":          "limit_req_zone $binary_remote_addr zone=a:1m rate=1r/s;\n",
		"sites/one.conf":      "server {\n  server_name one;\n  limit_req zone=a;\n}\n",
		"sites/two.conf":      "server {\n  server_name two;\n  include snippets/limit.conf;\n}\n",
		"snippets/limit.conf": "\n\nlimit_req zone=a burst=4;\n",
		"loop.conf":           "include loop.conf;\n",
	}
	conf := "http {\n  include zones.conf;\n  include sites/*.conf;\n  include nothing/*.conf;\n  include missing.conf;\n}\n"
	r, err := parse(t, "nginx.conf", "nginx", conf, files)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"server one | nginx:rate=1r/s | ip | sites/one.conf:3",
		"server two | nginx:rate=1r/s burst=4 | ip | snippets/limit.conf:3",
	}
	if got := summary(r); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Found[0].Defined.String() != "zones.conf:1" {
		t.Errorf("defined at %s", r.Found[0].Defined)
	}
	if w := warnings(r); w != "nginx.conf:5: include missing.conf: file does not exist; its directives are not read" {
		t.Errorf("warnings %q", w)
	}
	_, err = parse(t, "nginx.conf", "nginx", "http {\n include loop.conf;\n}", files)
	if err == nil || !strings.Contains(err.Error(), "/etc/x/loop.conf:1: includes nest more than 16 files deep") {
		t.Errorf("a file that includes itself: %v", err)
	}
	_, err = parse(t, "nginx.conf", "nginx", "http {\n include a b;\n}", files)
	if err == nil || err.Error() != `/etc/x/nginx.conf:2: invalid number of arguments in "include" directive` {
		t.Errorf("include with two files: %v", err)
	}
}

// A file without an http block is read as the contents of one, as nginx.conf includes
// it; one with locations and no server as the contents of a server.
func TestNginxReadsAPartOfAConfiguration(t *testing.T) {
	r, err := parse(t, "api.conf", "nginx", "limit_req_zone $binary_remote_addr zone=a:1m rate=3r/m;\nserver {\n limit_req zone=a;\n}\n", nil)
	if err != nil || !slices.Equal(summary(r), []string{"server at api.conf:2 | nginx:rate=3r/m | ip | api.conf:3"}) {
		t.Errorf("http part: %v %v", summary(r), err)
	}
	_, err = parse(t, "loc.conf", "nginx", "location / {\n limit_req zone=a;\n}\n", nil)
	if err == nil || err.Error() != `/etc/x/loc.conf:2: limit_req zone=a: no limit_req_zone defines zone "a"` {
		t.Errorf("server part: %v", err)
	}
}

// nginx keeps rates and bursts in thousandths; rlsim refuses one that would overflow them
// rather than model a wrapped number.
func TestNginxRefusesCountsThatOverflow(t *testing.T) {
	for _, conf := range []string{
		"limit_req_zone $binary_remote_addr zone=a:1m rate=9223372036854775807r/s;",
		"limit_req_zone $binary_remote_addr zone=a:1m rate=1r/s; limit_req zone=a burst=9223372036854775807;",
		"limit_req_zone $binary_remote_addr zone=a:1m rate=1r/s; limit_req zone=a delay=1099511627777;",
	} {
		_, err := parse(t, "nginx.conf", "nginx", "http { "+conf+" }", nil)
		if err == nil || !strings.Contains(err.Error(), "nginx.conf:1: invalid") {
			t.Errorf("%s: %v", conf, err)
		}
	}
	r, err := parse(t, "nginx.conf", "nginx", "http { limit_req_zone $binary_remote_addr zone=a:1m rate=1r/s; limit_req zone=a burst=1099511627776; }", nil)
	if err != nil || r.Found[0].Promise.Burst != 1<<40+1 {
		t.Errorf("the largest burst: %v %v", summary(r), err)
	}
}
