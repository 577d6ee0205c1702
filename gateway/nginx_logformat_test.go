package gateway_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/gateway"
)

// Every log_format of a configuration and of the files it includes comes back in the
// order nginx reads them, its strings joined, its escape= kept, each at its file:line.
func TestNginxLogFormatsReadsEveryDefinition(t *testing.T) {
	files := mapFiles{
		"nginx.conf": "events {}\nhttp {\n  log_format main '$remote_addr - $remote_user [$time_local] '\n" +
			"                  '\"$request\" $status $msec';\n  include conf.d/*.conf;\n" +
			"  server { access_log /var/log/a.log main; }\n}\n",
		"conf.d/json.conf": "log_format js escape=json '{\"ip\":\"$remote_addr\",\"t\":$msec}';\n",
		"conf.d/up.conf":   "log_format upstream \"$remote_addr 'x' $request_time\";\n",
	}
	got, err := gateway.NginxLogFormats("/etc/x/nginx.conf", files)
	if err != nil {
		t.Fatal(err)
	}
	want := []gateway.NginxLogFormat{
		{Name: "main", Format: `$remote_addr - $remote_user [$time_local] "$request" $status $msec`, At: gateway.Place{File: "nginx.conf", Line: 3}},
		{Name: "js", Escape: "json", Format: `{"ip":"$remote_addr","t":$msec}`, At: gateway.Place{File: "conf.d/json.conf", Line: 1}},
		{Name: "upstream", Format: `$remote_addr 'x' $request_time`, At: gateway.Place{File: "conf.d/up.conf", Line: 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestNginxLogFormatsErrors(t *testing.T) {
	for conf, want := range map[string]string{
		"http {\n log_format;\n}\n":                    "nginx.conf:2: invalid number of arguments",
		"http {\n log_format x escape=json;\n}\n":      "nginx.conf:2: invalid number of arguments",
		"http {\n log_format x escape=xml '$msec';\n}": "nginx.conf:2: log_format x: escape=xml",
		"http {\n log_format x '$msec;\n}\n":           "nginx.conf",
	} {
		_, err := gateway.NginxLogFormats("/etc/x/nginx.conf", mapFiles{"nginx.conf": conf})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error with %q", conf, err, want)
		}
	}
	if _, err := gateway.NginxLogFormats("/etc/x/none.conf", mapFiles{}); err == nil || !strings.Contains(err.Error(), "none.conf") {
		t.Errorf("a missing file: %v", err)
	}
}

// FuzzNginxLogFormats: whatever the file holds, an answer or an error, never a panic, and
// every format found has a name and a text.
func FuzzNginxLogFormats(f *testing.F) {
	f.Add("http { log_format main '$remote_addr $msec'; }")
	f.Add("log_format a escape=none \"$x\" '$y';\nlog_format b '$z';")
	f.Add("http { log_format ; }")
	f.Fuzz(func(t *testing.T, conf string) {
		got, err := gateway.NginxLogFormats("/etc/x/nginx.conf", mapFiles{"nginx.conf": conf})
		if err != nil {
			return
		}
		for _, lf := range got {
			if lf.Name == "" || lf.At.Line < 1 {
				t.Errorf("%q: %+v", conf, lf)
			}
		}
	})
}
