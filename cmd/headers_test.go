package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestHeadersDefaultIsARefusal(t *testing.T) {
	out, errOut, code := rlsim(t, "headers")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// sliding-window, 100/min, 101 requests at 10:00:48: the estimate lets one more in once
	// the previous window's weight has fallen by 1 %, 0.6 s into the next minute: 12.6 s.
	// The quota is whole only when both counters stop counting, at 10:02:00: t=72.
	for _, want := range []string{
		"HTTP/1.1 429 Too Many Requests\n",
		"Retry-After: 13\n",
		`RateLimit-Policy: "default";q=100;w=60` + "\n",
		`RateLimit: "default";r=0;t=72` + "\n",
		"Cache-Control: no-store\n",
		"Content-Type: application/problem+json\n",
		"\n{\n  \"type\": \"about:blank\",\n", // the body, indented to fit the terminal
		`  "policy": "default",` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestHeadersJSONFixedWindowBoundary(t *testing.T) {
	out, errOut, code := rlsim(t, "headers", "--algorithm", "fixed-window", "--legacy-headers", "--x-ratelimit", "--name", "per-user", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    struct {
			Policy string `json:"policy"`
		} `json:"body"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Retry-After": "12", "RateLimit-Remaining": "0", "RateLimit-Reset": "12", "X-RateLimit-Limit": "100",
		"RateLimit": `"per-user";r=0;t=12`}
	for k, v := range want {
		if r.Headers[k] != v {
			t.Errorf("%s = %q, want %q", k, r.Headers[k], v)
		}
	}
	if r.Status != 429 || r.Body.Policy != "per-user" {
		t.Errorf("%+v", r)
	}
}

func TestHeadersWithinTheLimitIs200(t *testing.T) {
	out, _, code := rlsim(t, "headers", "--requests", "40", "--algorithm", "token-bucket")
	if code != 0 || !strings.HasPrefix(out, "HTTP/1.1 200 OK\n") || !strings.Contains(out, `r=60`) || strings.Contains(out, "Retry-After") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// --requests 0 is the default burst, limit + 1, for two policies: exit 0, the same answer.
func TestHeadersZeroRequestsIsTheDefault(t *testing.T) {
	for _, limit := range []string{"100", "7"} {
		def, _, code := rlsim(t, "headers", "--limit", limit)
		zero, errOut, zcode := rlsim(t, "headers", "--limit", limit, "--requests", "0")
		if code != 0 || zcode != 0 || zero != def || !strings.HasPrefix(zero, "HTTP/1.1 429 ") {
			t.Fatalf("limit %s: exit %d and %d %s:\n%s\nwant:\n%s", limit, zcode, code, errOut, zero, def)
		}
	}
}

func TestHeadersCostBeyondTheLimitIs413(t *testing.T) {
	out, errOut, code := rlsim(t, "headers", "--requests", "1", "--cost", "101")
	if code != 0 || !strings.HasPrefix(out, "HTTP/1.1 413 ") || strings.Contains(out, "Retry-After") ||
		!strings.Contains(out, `r=100;t=0`) || !strings.Contains(out, "can never pass") {
		t.Fatalf("exit %d %s:\n%s", code, errOut, out)
	}
}

func TestHeadersBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--algorithm", "magic"}, {"--limit", "0"}, {"--window", "0s"}, {"--burst", "-1"},
		{"--requests", "-3"}, {"--cost", "0"}, {"--spread", "-1s"}, {"--name", ""},
	} {
		out, errOut, code := rlsim(t, append([]string{"headers"}, args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, args[0]) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
