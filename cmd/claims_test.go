package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/claims"
)

// A small list stands in for claims.All, whose full run is slow under -race: one claim that
// holds, one that does not, one not yet measurable.
var testClaims = []claims.Check{
	{Claim: "holds", Command: "rlsim a", Measure: func() (string, claims.Verdict, error) { return "1", claims.Holds, nil }},
	{Claim: "fails", Command: "rlsim b", Measure: func() (string, claims.Verdict, error) { return "2", claims.DoesNotHold, nil }},
	{Claim: "later", Command: "rlsim c"},
}

func TestClaimsJSONAndExitZeroWhenAClaimFails(t *testing.T) {
	var out bytes.Buffer
	err := runClaims(&claimsOptions{globalOptions: &globalOptions{format: "json"}}, IO{Out: &out}, testClaims)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Claims []map[string]string `json:"claims"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if len(doc.Claims) != 3 {
		t.Fatalf("claims = %v", doc.Claims)
	}
	for _, c := range doc.Claims {
		if len(c) != 4 || c["claim"] == "" || c["measured"] == "" || c["verdict"] == "" || c["command"] == "" {
			t.Errorf("claim object %v: want exactly claim, measured, verdict, command", c)
		}
	}
	if doc.Claims[1]["verdict"] != "does not hold" || doc.Claims[2]["verdict"] != "not yet measurable" || doc.Claims[2]["measured"] != "-" {
		t.Errorf("verdicts = %v", doc.Claims)
	}
}

func TestClaimsFormats(t *testing.T) {
	for format, want := range map[string]string{
		"table":    "2. fails\n   measured: 2\n   verdict:  does not hold\n   command:  rlsim b\n",
		"markdown": "|---|---|---|---|\n| holds | 1 | holds | rlsim a |\n| fails | 2 | does not hold | rlsim b |",
		"csv":      "fails,2,does not hold,rlsim b",
	} {
		var out bytes.Buffer
		if err := runClaims(&claimsOptions{globalOptions: &globalOptions{format: format}}, IO{Out: &out}, testClaims); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s output lacks %q:\n%s", format, want, out.String())
		}
	}
}

func TestClaimsCommandIsWired(t *testing.T) {
	out, errOut, code := rlsim(t, "claims", "--help")
	if code != 0 || !strings.Contains(out, "not yet measurable") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
}
