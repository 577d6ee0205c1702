package cmd

import (
	"strings"
	"testing"
)

func TestLoginAttackOutputNamesTheLayerThatRefused(t *testing.T) {
	out, errOut, code := rlsim(t, "compare", "--scenario", "login-attack", "--algorithms", "gcra", "--format", "markdown")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"key account=account+ip=ip", "| refused by account |", "| refused by ip |", "| attacker past account |", "brute-force", "spread-stuffing"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	only, _, code := rlsim(t, "compare", "--scenario", "login-attack", "--algorithms", "gcra", "--layers", "ip", "--format", "markdown")
	if code != 0 || strings.Contains(only, "refused by account") || !strings.Contains(only, "refused by ip") {
		t.Errorf("--layers ip did not keep only the ip layer:\n%s", only)
	}
}

func TestKeyOverrideAcceptsAnyPrefixAndProxyCount(t *testing.T) {
	for _, key := range []string{"ipv6/48", "ipv6/64", "xff:3", "xff-leftmost", "api-key"} {
		r := runJSON(t, "compare", "--scenario", "ipv6-rotation", "--algorithms", "gcra", "--key", key)
		if r.Results[0].Requests == 0 {
			t.Errorf("--key %s: no requests", key)
		}
	}
}

func TestIdentityUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--key", "ipv6/129"}, "--key: key \"ipv6/129\""},
		{[]string{"compare", "--key", "xff:0"}, "--key: key \"xff:0\""},
		{[]string{"compare", "--scenario", "login-attack", "--layers", "cookie"}, `no layer "cookie" (it has account, ip)`},
		{[]string{"compare", "--scenario", "page-load", "--layers", "ip"}, "has no layered limits"},
		{[]string{"compare", "--scenario", "login-attack", "--layers", "ip", "--key", "ip"}, "--key and --layers"},
	} {
		out, errOut, code := rlsim(t, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
}

func TestUnkeyableRequestsAreRefusedAndExplained(t *testing.T) {
	out, errOut, code := rlsim(t, "compare", "--scenario", "login-attack", "--algorithms", "gcra", "--key", "api-key")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The note wraps to the terminal's 100 columns.
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "unkeyed: requests that could not be keyed were refused; first reason: api-key: request carries no identity of this kind") {
		t.Errorf("no unkeyed note:\n%s", out)
	}
}

func TestIdentityScenariosSameSeedSameBytes(t *testing.T) {
	t.Parallel()
	args := []string{"compare", "--algorithms", "gcra", "--format", "json"}
	for _, s := range []string{"page-load", "nat-crowd", "ip-rotation", "ipv6-rotation", "xff-spoofing", "login-attack", "cost-weighted", "tenants"} {
		args = append(args, "--scenario", s)
	}
	a, errOut, code := rlsim(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, _, _ := rlsim(t, args...)
	c, _, _ := rlsim(t, append(args, "--seed", "2")...)
	if a != b {
		t.Fatal("same seed gave different JSON")
	}
	if a == c {
		t.Fatal("another seed gave the same JSON: the seed does not reach the generators")
	}
}
