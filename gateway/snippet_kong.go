package gateway

import (
	"errors"
	"fmt"
	"strings"
)

func init() {
	var params []string
	for _, p := range kongPeriods {
		params = append(params, p.name)
	}
	registerSnippet(snippetWriter{
		product: "kong", name: "Kong's rate-limiting plugin",
		params: append(params, "policy"),
		keys:   append([]string{"ip"}, identityKinds...),
		check:  checkKongSnippet,
		why:    whyNotKong,
		write:  writeKongSnippet,
	})
}

// kongSnippetMaxCount is the most requests a spec may give a period (2⁵³).
const kongSnippetMaxCount = 1 << 53

func checkKongSnippet(set []Param) error {
	var longest int64
	var longestName string
	for _, p := range kongPeriods {
		v, ok := value(set, p.name)
		if !ok {
			continue
		}
		n, ok := wholeNumber(v, 1, kongSnippetMaxCount)
		if !ok {
			return fmt.Errorf("%s: want a whole number of requests, at least 1 and at most 2⁵³, got %q", p.name, v)
		}
		if longestName != "" && n < longest {
			return fmt.Errorf("%s=%d is lower than %s=%d: the plugin refuses a longer period with a lower limit", p.name, n, longestName, longest)
		}
		longest, longestName = n, p.name
	}
	if longestName == "" {
		return errors.New("at least one of second, minute, hour, day, month, year is required")
	}
	switch policy, _ := value(set, "policy"); policy {
	case "", "local", "redis":
	default:
		return fmt.Errorf("policy: want local or redis, got %q", policy)
	}
	return nil
}

func whyNotKong(k snippetKey) string {
	switch k.kind {
	case "xff", "ipv6", "xff-leftmost":
		return "the plugin counts on the client address Kong settles on (kong.conf's trusted_ips and real_ip_header decide it); set those, then key ip"
	case "route":
		return "limit_by: path counts the one path the plugin's config names, not each request's; put a plugin on each route instead"
	}
	return "no limit_by of the plugin holds it"
}

// writeKongSnippet writes a declarative configuration with one global rate-limiting
// plugin.
func writeKongSnippet(s snippetSpec, k snippetKey) (string, error) {
	set := s.sets[0]
	words := "each client address, as Kong settles on it"
	if k.kind != "ip" {
		words = "the " + k.header + " request header; a request without it is counted by its client address"
	}
	var b strings.Builder
	b.WriteString(snippetHead("#", s, k, words,
		"`rlsim import` reads this back as that spec and key.",
		"",
		"One global plugin; the same config under a service, route or consumer limits only that one. With an authentication plugin, limit_by: consumer counts each consumer (rlsim's user).",
	))
	b.WriteString("_format_version: \"3.0\"\nplugins:\n  - name: rate-limiting\n    config:\n")
	for _, p := range kongPeriods {
		if v, ok := value(set, p.name); ok {
			fmt.Fprintf(&b, "      %s: %s\n", p.name, v)
		}
	}
	if v, ok := value(set, "policy"); ok {
		fmt.Fprintf(&b, "      policy: %s\n", v)
	}
	if k.kind == "ip" {
		b.WriteString("      limit_by: ip\n")
	} else {
		fmt.Fprintf(&b, "      limit_by: header\n      header_name: %s\n", k.header)
	}
	return b.String(), nil
}
