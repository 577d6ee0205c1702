package gateway

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

func init() {
	registerSnippet(snippetWriter{
		product: "traefik", name: "Traefik's rateLimit",
		params: []string{"average", "period", "burst"},
		keys:   append([]string{"ip", "ipv6", "xff"}, identityKinds...),
		check:  checkTraefikSnippet,
		why:    whyNotTraefik,
		write:  writeTraefikSnippet,
	})
}

func checkTraefikSnippet(set []Param) error {
	v, ok := value(set, "average")
	if !ok {
		return errors.New("average is required: requests per period, at least 1")
	}
	if _, ok := wholeNumber(v, 1, math.MaxInt64/int64(time.Second)); !ok {
		return fmt.Errorf("average: want a whole number of requests from 1 to %d, got %q", math.MaxInt64/int64(time.Second), v)
	}
	if v, ok := value(set, "period"); ok {
		_, whole := wholeNumber(v, 1, math.MaxInt64/int64(time.Second))
		if d, err := time.ParseDuration(v); !whole && (err != nil || d < 1) {
			return fmt.Errorf("period: want a duration (1s, 1m) or whole seconds, got %q", v)
		}
	}
	if v, ok := value(set, "burst"); ok {
		if _, ok := wholeNumber(v, 0, 1<<53); !ok {
			return fmt.Errorf("burst: want a whole number of requests from 0 to 2⁵³, got %q", v)
		}
	}
	return nil
}

func whyNotTraefik(k snippetKey) string {
	switch k.kind {
	case "xff-leftmost":
		return "ipStrategy counts X-Forwarded-For addresses from the right (depth), never from the left"
	case "route":
		return "sourceCriterion keys on an address, a header or the host, not the path; put a middleware on each router instead"
	}
	return "no sourceCriterion holds it"
}

// writeTraefikSnippet writes a dynamic configuration with one rateLimit middleware.
func writeTraefikSnippet(s snippetSpec, k snippetKey) (string, error) {
	set := s.sets[0]
	var criterion, words string
	switch k.kind {
	case "ip":
		words = "each client address"
	case "ipv6":
		if k.n == 0 {
			return "", fmt.Errorf("key %s: Traefik's rateLimit cannot count on it: ipStrategy.ipv6Subnet 0 means no subnet, each address apart", k.text)
		}
		criterion = fmt.Sprintf("ipStrategy:\n            ipv6Subnet: %d\n", k.n)
		words = fmt.Sprintf("each client address, IPv6 by its /%d (Traefik 3.1 and later)", k.n)
	case "xff":
		criterion = fmt.Sprintf("ipStrategy:\n            depth: %d\n", k.n)
		words = fmt.Sprintf("the X-Forwarded-For address %d from the right, the one the first of %d trusted proxies appended", k.n, k.n)
	default:
		criterion = "requestHeaderName: " + k.header + "\n"
		words = "the " + k.header + " request header; requests without it share one bucket"
	}
	var b strings.Builder
	b.WriteString(snippetHead("#", s, k, words,
		"`rlsim import` reads this back as that spec and key.",
		"",
		"Add rlsim-limit to the middlewares of each router it limits.",
	))
	b.WriteString("http:\n  middlewares:\n    rlsim-limit:\n      rateLimit:\n")
	for _, name := range []string{"average", "period", "burst"} {
		if v, ok := value(set, name); ok {
			fmt.Fprintf(&b, "        %s: %s\n", name, v)
		}
	}
	if criterion != "" {
		fmt.Fprintf(&b, "        sourceCriterion:\n          %s", criterion)
	}
	return b.String(), nil
}
