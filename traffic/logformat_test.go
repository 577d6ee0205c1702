package traffic

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// exampleParser compiles format f for its own example with every identity wanted (and the
// headers its fields name), and returns the example's line.
func exampleParser(t testing.TB, f LogFormat, want Identities) (LineParser, []byte) {
	t.Helper()
	c := LogConfig{Want: want, Spec: f.ExampleSpec, Headers: []string{"user-agent", "x-request-id"}}
	p, err := f.New(c)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	example := f.Example
	if f.Header {
		header, line, ok := strings.Cut(example, "\n")
		if !ok {
			t.Fatalf("%s: a format with a header gives the header and a line", f.Name)
		}
		if err := p.(HeaderParser).Header([]byte(header)); err != nil {
			t.Fatalf("%s: header: %v", f.Name, err)
		}
		example = line
	}
	return p, []byte(example)
}

// TestEveryLogFormatKeepsTheContract holds every registered format to what LogFormat and
// LineParser promise: a summary and the identities it reads; its example read into a time
// inside the clock and something to key on; the same time, address and readability
// whatever the run wants of it; no state kept between lines; and, for every cut of the
// example and a few garbled copies, an error that says something or a line, never a panic.
func TestEveryLogFormatKeepsTheContract(t *testing.T) {
	names := LogFormats()
	if len(names) < 8 {
		t.Fatalf("%d formats registered: %v", len(names), names)
	}
	for _, name := range names {
		f, _ := LookupLogFormat(name)
		t.Run(name, func(t *testing.T) {
			if f.Summary == "" || len(f.Fields) == 0 {
				t.Errorf("no summary or fields: %+v", f)
			}
			if f.Spec != (f.ExampleSpec != "") {
				t.Errorf("a format defined by a spec gives an example spec, and only it")
			}
			all, example := exampleParser(t, f, WantAll)
			var l LogLine
			if err := all.Parse(example, &l); err != nil {
				t.Fatalf("its example: %v", err)
			}
			if l.Time < time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() || l.Time > time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).UnixNano() {
				t.Errorf("its example's time %s is not on 2026-01-01", time.Unix(0, l.Time).UTC())
			}
			if !l.Request.ClientIP.IsValid() && l.Request.XFFSent == "" {
				t.Errorf("its example carries neither a client address nor X-Forwarded-For: %+v", l.Request)
			}
			none, _ := exampleParser(t, f, 0)
			var bare LogLine
			if err := none.Parse(example, &bare); err != nil || bare.Time != l.Time || bare.Whole != l.Whole || bare.Request.ClientIP != l.Request.ClientIP {
				t.Errorf("wanting nothing changed the line: %v, %+v against %+v", err, bare, l)
			}
			// No state between lines: a garbled line between two reads of the example
			// changes nothing.
			var again LogLine
			none.Parse([]byte("garbage"), &again)
			again = LogLine{}
			if err := all.Parse(example, &again); err != nil || again != l {
				t.Errorf("a second read differs: %v, %+v against %+v", err, again, l)
			}
			for cut := range len(example) {
				checkParse(t, all, example[:cut])
				garbled := bytes.Clone(example)
				garbled[cut] ^= 0x55
				checkParse(t, all, garbled)
				checkParse(t, all, append(bytes.Clone(example[:cut]), example[cut+1:]...))
			}
		})
	}
}

// checkParse parses line and checks that it fails with a reason or reads a time inside
// the clock, without panicking.
func checkParse(t *testing.T, p LineParser, line []byte) {
	t.Helper()
	var l LogLine
	err := p.Parse(line, &l)
	if err != nil {
		if err.Error() == "" {
			t.Fatalf("%q: an error with no reason", line)
		}
		return
	}
	if l.Time < earliestUnix*1e9-int64(1e6*time.Second) || l.Time >= latestUnix*1e9 {
		t.Fatalf("%q: read the time %d, outside the clock", line, l.Time)
	}
}

func TestRegisteringALogFormatTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second combined was registered")
		}
	}()
	f, _ := LookupLogFormat("combined")
	RegisterLogFormat(f)
}

func TestLogFormatForTheExtension(t *testing.T) {
	for file, want := range map[string]string{
		"a.jsonl": "jsonl", "a.ndjson.gz": "jsonl", "b.CSV": "csv", "access.log": "combined", "access.log.gz": "combined", "-": "combined",
	} {
		if got := LogFormatFor(file); got != want {
			t.Errorf("%s: %s, want %s", file, got, want)
		}
	}
}

// parseOne reads one line of format name with spec, fields and headers, wanting everything.
func parseOne(t *testing.T, name, spec string, fields map[string]string, line string) (LogLine, error) {
	t.Helper()
	f, err := LookupLogFormat(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.New(LogConfig{Want: WantAll, Spec: spec, Fields: fields, Headers: []string{"user-agent", "x-api-key", "x-user"}})
	if err != nil {
		return LogLine{}, err
	}
	var l LogLine
	return l, p.Parse([]byte(line), &l)
}

func utc(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixNano()
}

// Every format reads its own fields into the identities its doc comment names, and the
// finest time it has: the arrival where the line gives it or a duration to take off.
func TestEachFormatReadsItsFields(t *testing.T) {
	type want struct {
		time        string
		whole       bool
		ip, user    string
		xff, route  string
		ua, apiKey  string
		headerXUser string
	}
	for _, tt := range []struct {
		name, format, spec string
		fields             map[string]string
		line               string
		want               want
	}{
		{"combined", "combined", "", nil,
			`203.0.113.7 - alice [01/Jan/2026:10:00:59 +0100] "GET /a/b?x=1 HTTP/1.1" 200 5 "-" "curl/8" "198.51.100.4"`,
			want{time: "2026-01-01T09:00:59Z", whole: true, ip: "203.0.113.7", user: "alice", xff: "198.51.100.4", route: "GET /a/b", ua: "curl/8"}},
		{"nginx $msec and $request_time", "nginx", `$remote_addr - $remote_user [$time_local] "$request" $status $msec $request_time "$http_x_api_key"`, nil,
			`2001:db8::7 - bob [01/Jan/2026:10:00:59 +0000] "POST /login HTTP/2.0" 401 1767261659.900 0.125 "k-1"`,
			want{time: "2026-01-01T10:00:59.775Z", ip: "2001:db8::7", user: "bob", route: "POST /login", apiKey: "k-1"}},
		{"nginx.conf's quoted pieces, $time_iso8601, escapes", "nginx", `log_format main '$remote_addr [$time_iso8601] '
                    '"$http_user_agent" $http_x_user';`, nil,
			`203.0.113.8 [2026-01-01T11:00:59+01:00] "ua \x22quoted\x22" carol`,
			want{time: "2026-01-01T10:00:59Z", whole: true, ip: "203.0.113.8", ua: `ua "quoted"`, headerXUser: "carol"}},
		{"nginx --field", "nginx", `$binary_remote_addr $msec $http_x_account`, map[string]string{"user": "http_x_account"},
			`\xCB\x00q\x09 1767261659.001 dave`,
			want{time: "2026-01-01T10:00:59.001Z", ip: "203.0.113.9", user: "dave"}},
		{"alb", "alb", "", nil,
			`h2 2026-01-01T10:00:59.912345Z app/lb/1 [2001:db8::9]:2817 10.0.0.1:80 0.001 0.010 0.000 200 200 34 366 "GET https://h:443/v1/x?y=2 HTTP/2.0" "curl/8" - - arn "Root=1" "-" "-" 1 2026-01-01T10:00:59.900123Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-" conn-1`,
			want{time: "2026-01-01T10:00:59.900123Z", ip: "2001:db8::9", route: "GET /v1/x", ua: "curl/8"}},
		{"envoy", "envoy", "", nil,
			`[2026-01-01T10:00:59.900Z] "PUT /v1/y HTTP/2" 204 - 154 0 226 100 "198.51.100.4" "nsq2http" "cc21" "locations" "tcp://10.0.2.1:80"`,
			want{time: "2026-01-01T10:00:59.9Z", xff: "198.51.100.4", route: "PUT /v1/y", ua: "nsq2http"}},
		{"istio", "envoy", "", nil,
			`[2026-01-01T10:00:59.900Z] "GET /z HTTP/1.1" 200 - via_upstream - "-" 0 5 3 2 "-" "ua" "id" "host" "10.0.0.2:80" outbound|80||x 10.0.0.3:4 10.0.0.4:80 203.0.113.10:5555 - default`,
			want{time: "2026-01-01T10:00:59.9Z", ip: "203.0.113.10", route: "GET /z", ua: "ua"}},
		{"haproxy with captures", "haproxy", "", map[string]string{"user": "capture:1", "xff": "capture:2"},
			`Jan  1 10:00:59 lb haproxy[1]: 203.0.113.11:33317 [01/Jan/2026:10:00:59.905] fe be/s1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {erin|198.51.100.5, 10.0.0.1} {} "GET /h?q HTTP/1.1"`,
			want{time: "2026-01-01T10:00:59.905Z", ip: "203.0.113.11", user: "erin", xff: "198.51.100.5, 10.0.0.1", route: "GET /h"}},
		{"haproxy raw", "haproxy", "", nil,
			`203.0.113.12:1 [01/Jan/2026:10:00:59.000] fe be/s1 1/0/1/1/3 429 10 - - ---- 1/1/1/1/0 0/0 "GET / HTTP/1.1"`,
			want{time: "2026-01-01T10:00:59Z", ip: "203.0.113.12", route: "GET /"}},
		{"caddy", "caddy", "", nil,
			`{"ts":1767261659.9041,"logger":"http.log.access","request":{"remote_ip":"203.0.113.13","method":"GET","uri":"/c?d","headers":{"User-Agent":["curl/8"],"X-Api-Key":["k-2"]}},"user_id":"frank","duration":0.0041}`,
			want{time: "2026-01-01T10:00:59.9Z", ip: "203.0.113.13", user: "frank", route: "GET /c", ua: "curl/8", apiKey: "k-2"}},
		{"caddy --field", "caddy", "", map[string]string{"ip": "request.client_ip", "tenant": "request.headers.X-Tenant"},
			`{"ts":"2026-01-01T10:00:59.5Z","request":{"remote_ip":"10.0.0.1","client_ip":"203.0.113.14","headers":{}}}`,
			want{time: "2026-01-01T10:00:59.5Z", ip: "203.0.113.14"}},
		{"jsonl --field", "jsonl", "", map[string]string{"user": "uid", "time": "ts", "duration": "took", "header:x-api-key": "key"},
			`{"ts": 1767261660, "uid": 42, "took": 0.25, "key": "k-3", "status": 200}`,
			want{time: "2026-01-01T10:00:59.75Z", whole: true, user: "42", apiKey: "k-3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := parseOne(t, tt.format, tt.spec, tt.fields, tt.line)
			if err != nil {
				t.Fatal(err)
			}
			r := l.Request
			got := want{time: time.Unix(0, l.Time).UTC().Format(time.RFC3339Nano), whole: l.Whole, user: r.User, xff: r.XFFSent, route: r.Route,
				ua: r.Headers.Get("user-agent"), apiKey: r.Headers.Get("x-api-key"), headerXUser: r.Headers.Get("x-user")}
			if r.ClientIP.IsValid() {
				got.ip = r.ClientIP.String()
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if r.User != "" && r.Account != r.User {
				t.Errorf("account %q, want the user %q", r.Account, r.User)
			}
		})
	}
}

// A format that cannot be read as configured is an error before any line: a log_format
// without a time, two variables side by side, a --field the format has no column for.
func TestLogFormatConfigurationErrors(t *testing.T) {
	for _, tt := range []struct {
		format, spec string
		fields       map[string]string
		want         string
	}{
		{"nginx", `$remote_addr "$request"`, nil, "no time variable"},
		{"nginx", `$remote_addr$msec`, nil, "nothing between them"},
		{"nginx", `$msec $remote_addr`, map[string]string{"user": "http_x_user"}, "the log_format has no $http_x_user"},
		{"nginx", `log_format main '$msec`, nil, "not closed"},
		{"nginx", `escape=xml $msec`, nil, "escape=xml"},
		{"combined", "", map[string]string{"user": "u"}, "fields are fixed"},
		{"haproxy", "", map[string]string{"user": "u"}, "capture:1"},
		{"haproxy", "", map[string]string{"user": "capture:0"}, "1 to 64"},
	} {
		f, _ := LookupLogFormat(tt.format)
		_, err := f.New(LogConfig{Spec: tt.spec, Fields: tt.fields})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q %v: %v, want %q", tt.format, tt.spec, tt.fields, err, tt.want)
		}
	}
	if _, err := ParseFieldMap([]string{"usr=x"}); err == nil || !strings.Contains(err.Error(), `unknown name "usr"`) {
		t.Errorf("--field usr=x: %v", err)
	}
	if _, err := ParseFieldMap([]string{"user=a", "user=b"}); err == nil {
		t.Error("a name mapped twice was accepted")
	}
}

func fuzzFormat(f *testing.F, format, spec string, fields map[string]string) {
	lf, _ := LookupLogFormat(format)
	f.Add([]byte(lf.Example + "\n" + lf.Example + "\n"))
	f.Add([]byte("\n\x1f\x8b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLogReader(t, data, lf, LogConfig{Want: WantAll, Spec: spec, Fields: fields, Headers: []string{"user-agent"}})
	})
}

func FuzzReadNginx(f *testing.F) {
	f.Add([]byte(`$remote_addr [$time_local] "$request" $msec $request_time`), []byte("1.2.3.4 [01/Jan/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 1767261600.5 0.1\n"))
	f.Add([]byte(`'${remote_addr}' "$http_x" $binary_remote_addr $time_iso8601`), []byte("1.2.3.4 \"-\" \\x01\\x02\\x03\\x04 2026-01-01T10:00:00Z\n"))
	f.Fuzz(func(t *testing.T, spec, data []byte) {
		lf, _ := LookupLogFormat("nginx")
		if _, err := lf.New(LogConfig{Spec: string(spec)}); err != nil {
			if err.Error() == "" {
				t.Fatal("a spec error with no reason")
			}
			return
		}
		checkLogReader(t, data, lf, LogConfig{Want: WantAll, Spec: string(spec), Headers: []string{"x"}})
	})
}

func FuzzReadALB(f *testing.F)   { fuzzFormat(f, "alb", "", nil) }
func FuzzReadEnvoy(f *testing.F) { fuzzFormat(f, "envoy", "", nil) }
func FuzzReadHAProxy(f *testing.F) {
	fuzzFormat(f, "haproxy", "", map[string]string{"user": "capture:1"})
}
func FuzzReadCaddy(f *testing.F) {
	fuzzFormat(f, "caddy", "", map[string]string{"tenant": "request.headers.X-Tenant"})
}
