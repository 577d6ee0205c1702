package gateway

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

func init() {
	registerSnippet(snippetWriter{
		product: "nginx", name: "nginx",
		params: []string{"rate", "burst", "delay"}, flags: []string{"nodelay"},
		stacks: true,
		keys:   append([]string{"route", "ip", "xff:1", "xff-leftmost"}, identityKinds...),
		check:  checkNginxSnippet,
		why:    whyNotNginx,
		write:  writeNginxSnippet,
	})
}

// The largest rate and burst nginx's model takes.
const (
	ngxSnippetMaxRate  = 1_000_000_000
	ngxSnippetMaxBurst = 1_000_000
)

func checkNginxSnippet(set []Param) error {
	rate, ok := value(set, "rate")
	if !ok {
		return errors.New("rate is required (rate=10r/s or rate=30r/m)")
	}
	num, unitOK := strings.CutSuffix(rate, "r/s")
	if !unitOK {
		num, unitOK = strings.CutSuffix(rate, "r/m")
	}
	if _, ok := wholeNumber(num, 1, ngxSnippetMaxRate); !unitOK || !ok {
		return fmt.Errorf("rate %q: want a whole number of requests from 1 to %d and r/s or r/m (10r/s, 30r/m)", rate, ngxSnippetMaxRate)
	}
	for _, name := range []string{"burst", "delay"} {
		if v, ok := value(set, name); ok {
			if _, ok := wholeNumber(v, 1, ngxSnippetMaxBurst); !ok {
				return fmt.Errorf("%s %q: want a whole number from 1 to %d", name, v, ngxSnippetMaxBurst)
			}
		}
	}
	_, delay := value(set, "delay")
	_, nodelay := value(set, "nodelay")
	if delay && nodelay {
		return errors.New("nodelay and delay= together: give one")
	}
	return nil
}

func whyNotNginx(k snippetKey) string {
	switch k.kind {
	case "xff":
		return "nginx's realip module finds the client in X-Forwarded-For by the addresses of the proxies it trusts (set_real_ip_from, real_ip_recursive), not by their number; xff:1, the address the last proxy appended, is what one trusted proxy gives"
	case "ipv6":
		return "limit_req_zone keys on the whole address; a prefix takes a map of your own"
	}
	return "no variable of nginx holds it"
}

// ngxKeyVariable is the variable a zone keys on for k, with words for the snippet's
// head.
func ngxKeyVariable(k snippetKey) (variable, words string) {
	switch k.kind {
	case "ip":
		return "$binary_remote_addr", "each client address"
	case "xff":
		return "$binary_remote_addr", "the address your proxy appended to X-Forwarded-For, which the realip lines below make the client address"
	case "xff-leftmost":
		return "$http_x_forwarded_for", "X-Forwarded-For as the client sent it: a client that writes its own gets a new key each time, and one without it is not limited"
	case "route":
		return "$uri", "each request path"
	}
	return "$http_" + strings.ToLower(strings.ReplaceAll(k.header, "-", "_")), "the " + k.header + " request header; nginx does not limit a request without it"
}

// writeNginxSnippet writes one limit_req_zone per set and the limit_req lines of one
// location: every zone must admit a request, as nginx checks them.
func writeNginxSnippet(s snippetSpec, k snippetKey) (string, error) {
	variable, words := ngxKeyVariable(k)
	var b strings.Builder
	b.WriteString(snippetHead("#", s, k, words,
		"`rlsim import` reads these lines back as that spec and key.",
		"",
		"They go in http { }: limit_req_zone once, limit_req in every location the limit applies to (here the server's location /); leave out limit_req_status if your http { } sets one. nginx's documentation: a megabyte of zone holds about 16 000 keys.",
	))
	if k.kind == "xff" {
		b.WriteString("\n# The proxy in front of nginx: replace 10.0.0.0/8 with its addresses. nginx takes the\n")
		b.WriteString("# last X-Forwarded-For address of a request that comes from it as the client's.\n")
		b.WriteString("set_real_ip_from 10.0.0.0/8;\nreal_ip_header X-Forwarded-For;\n")
	}
	b.WriteString("\n")
	zones := make([]string, len(s.sets))
	for i, set := range s.sets {
		zones[i] = "rlsim"
		if len(s.sets) > 1 {
			zones[i] += "_" + strconv.Itoa(i+1)
		}
		rate, _ := value(set, "rate")
		fmt.Fprintf(&b, "limit_req_zone %s zone=%s:10m rate=%s;\n", variable, zones[i], rate)
	}
	b.WriteString("limit_req_status 429;\n\nserver {\n    location / {\n")
	for i, set := range s.sets {
		line := "limit_req zone=" + zones[i]
		for _, p := range set {
			switch {
			case p.Name == "rate":
			case p.Flag:
				line += " " + p.Name
			default:
				line += " " + p.Name + "=" + p.Value
			}
		}
		fmt.Fprintf(&b, "        %s;\n", line)
	}
	b.WriteString("    }\n}\n")
	return b.String(), nil
}
