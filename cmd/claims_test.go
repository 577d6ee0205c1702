package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rlsim/rlsim/claims"
)

// Two cheap claims (each one `rlsim headers`) stand in for the whole list, whose run the
// claims package tests.
var twoClaims = []string{"--claim", "status-429", "--claim", "no-store"}

func TestClaimsJSONCarriesEveryField(t *testing.T) {
	out, errOut, code := rlsim(t, append([]string{"claims", "--format", "json"}, twoClaims...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Claims []map[string]string `json:"claims"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(doc.Claims) != 2 || doc.Claims[0]["id"] != "status-429" || doc.Claims[1]["id"] != "no-store" {
		t.Fatalf("claims = %v", doc.Claims)
	}
	for _, c := range doc.Claims {
		if len(c) != len(claims.Columns) {
			t.Errorf("claim object %v: want exactly %v", c, claims.Columns)
		}
		for _, f := range claims.Columns {
			if c[f] == "" {
				t.Errorf("%s: empty %s", c["id"], f)
			}
		}
		if c["verdict"] != "holds" || c["command"] != "rlsim headers" {
			t.Errorf("%s: verdict %q, command %q", c["id"], c["verdict"], c["command"])
		}
	}
}

func TestClaimsColumnsAndFormats(t *testing.T) {
	for format, want := range map[string]string{
		"markdown": "| id | verdict |\n|---|---|\n| status-429 | holds |\n| no-store | holds |\n\n2 claims: 2 holds.\n",
		"csv":      "id,verdict\nstatus-429,holds\nno-store,holds\n",
		"table":    "1. status-429: holds\n\n2. no-store: holds\n2 claims: 2 holds.\n",
	} {
		out, errOut, code := rlsim(t, append([]string{"claims", "--format", format, "--columns", "id,verdict"}, twoClaims...)...)
		if code != 0 || out != want {
			t.Errorf("%s: exit %d (%s), got\n%s\nwant\n%s", format, code, errOut, out, want)
		}
	}
	out, _, _ := rlsim(t, "claims", "--claim", "status-429", "--columns", "claim,command")
	want := "1.\n   claim:   A client over its limit gets 429, not 503 (server overloaded) or 403 (not allowed at\n" +
		"            all).\n   command: rlsim headers\n1 claim: 1 holds.\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestClaimsBadCommandLines(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"claims", "--claim", "nope"}, `--claim: unknown claim "nope" (want one of fixed-window-200-in-200ms, `},
		{[]string{"claims", "--columns", "id,nope"}, `--columns: unknown field "nope" (want id, claim, section, measured, verdict, regime, command)`},
		{[]string{"claims", "extra"}, `takes no arguments, got "extra"`},
	} {
		out, errOut, code := rlsim(t, tt.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

// The text output keeps to 100 columns whatever the fields hold: long sentences, words
// longer than a line, several long commands.
func TestClaimsTextWrapsTo100Columns(t *testing.T) {
	long := strings.Repeat("a measured figure of 12.3% and 4567 requests, ", 12)
	results := []claims.Result{{
		ID: "some-claim", Claim: long, Section: "Section", Measured: long + strings.Repeat("x", 250),
		Verdict: claims.Depends, Regime: "holds somewhere; fails elsewhere",
		Command: "rlsim compare --scenario steady-poisson --algorithms fixed-window,sliding-log,sliding-window,notes-sliding-window,token-bucket --decisions decisions.csv; rlsim headers",
	}}
	var b bytes.Buffer
	if err := renderClaims(&b, "table", claims.Columns, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > claimsWidth {
			t.Errorf("line %d: %d columns: %q", i+1, n, l)
		}
	}
	text := b.String()
	for _, want := range []string{
		"1. some-claim: depends\n",
		"   command:  rlsim compare --scenario steady-poisson --algorithms \\\n",
		"\n             rlsim headers\n",
		"   regime:   holds somewhere; fails elsewhere\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Cutting the long word loses nothing.
	if strings.Count(strings.ReplaceAll(text, "\n", ""), "x") < 250 {
		t.Errorf("a long word lost characters")
	}
}

func TestClaimsCommandIsWired(t *testing.T) {
	out, errOut, code := rlsim(t, "claims", "--help")
	if code != 0 || !strings.Contains(out, "--claim") || !strings.Contains(out, "depends (the regime names") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
}
