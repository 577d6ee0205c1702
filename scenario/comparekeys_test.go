package scenario

import (
	"strings"
	"testing"
)

func TestCompareKeysErrorsNameTheField(t *testing.T) {
	tests := []struct{ body, want string }{
		{"compare_keys: [ip, shoe]\n", "t.yaml:3:20: compare_keys[1]: unknown key \"shoe\""},
		{"compare_keys: [ip, ip]\n", "compare_keys[1]: \"ip\" is listed twice"},
		{"compare_keys: [user]\n", "compare_keys[0]: \"user\" is the scenario's own key"},
		{"compare_keys: ip\n", "compare_keys"},
	}
	for _, tt := range tests {
		body := "duration: 1m\npolicy: {limit: 1, window: 1s}\n" + tt.body + "traffic:\n  - nat-crowd: {users: 1, rate_per_user: 1}\n"
		_, err := Parse("t.yaml", []byte(body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.body, err, tt.want)
		}
	}
}

func TestWithKeyLeavesTheScenarioAlone(t *testing.T) {
	sc, err := Load("login-attack")
	if err != nil {
		t.Fatal(err)
	}
	layers := len(sc.Limits)
	c, err := sc.WithKey("ip")
	if err != nil {
		t.Fatal(err)
	}
	// The ip layer is kept alone, with its own limit.
	if len(c.Limits) != 1 || c.Limits[0].Key != "ip" || c.Limits[0].Limit != 20 || len(sc.Limits) != layers || layers < 2 {
		t.Fatalf("copy has layers %+v; original %d layers", c.Limits, len(sc.Limits))
	}
	u, err := sc.WithKey("user")
	if err != nil {
		t.Fatal(err)
	}
	if u.Key != "user" || len(u.Limits) != 0 || len(sc.Limits) != layers {
		t.Fatalf("a key no layer has: key %q, %d layers", u.Key, len(u.Limits))
	}
	if _, err := sc.WithKey("shoe"); err == nil {
		t.Fatal("an unknown key was accepted")
	}
}
