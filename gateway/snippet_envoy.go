package gateway

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

func init() {
	registerSnippet(snippetWriter{
		product: "envoy-local", name: "Envoy's local_ratelimit",
		params: []string{"max_tokens", "tokens_per_fill", "fill_interval", "version"},
		keys:   []string{"route"},
		check:  checkEnvoySnippet,
		why: func(snippetKey) string {
			return "its token bucket is one per filter or one per route; per-client buckets take descriptors, which rlsim's envoy-local model does not run"
		},
		write: writeEnvoySnippet,
	})
}

// envoySnippetMaxCount is the most tokens a spec may give (2⁵³, as the models read
// counts).
const envoySnippetMaxCount = 1 << 53

// envoyRelease reports whether v names an Envoy release: 1.N or 1.N.P, a v before it
// allowed.
func envoyRelease(v string) bool {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "1" {
		return false
	}
	for _, p := range parts[1:] {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return false
		}
	}
	return true
}

func checkEnvoySnippet(set []Param) error {
	if _, ok := value(set, "max_tokens"); !ok {
		return errors.New("max_tokens and fill_interval are required")
	}
	for _, name := range []string{"max_tokens", "tokens_per_fill"} {
		if v, ok := value(set, name); ok {
			if _, ok := wholeNumber(v, 1, envoySnippetMaxCount); !ok {
				return fmt.Errorf("%s: want a whole number of tokens, at least 1 and at most 2⁵³, got %q", name, v)
			}
		}
	}
	fill, ok := value(set, "fill_interval")
	if !ok {
		return errors.New("max_tokens and fill_interval are required")
	}
	if d, err := time.ParseDuration(fill); err != nil || d < 50*time.Millisecond {
		return fmt.Errorf("fill_interval: want a duration of at least 50ms (as 1s, 500ms, 1m), got %q", fill)
	}
	if v, ok := value(set, "version"); ok && !envoyRelease(v) {
		return fmt.Errorf("version: want an Envoy release as 1.30 or 1.31.2, got %q", v)
	}
	return nil
}

// envoySeconds writes d as a protobuf Duration in Envoy's YAML: seconds, with the
// decimals it needs, and an "s".
func envoySeconds(d time.Duration) string {
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if frac := d % time.Second; frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", int64(frac)), "0")
	}
	return s + "s"
}

const envoyLocalType = "type.googleapis.com/" + envoyHTTPLocal

// writeEnvoySnippet writes the local_ratelimit filter for the HTTP connection manager and
// the bucket of one route, which each route that carries it gets of its own.
func writeEnvoySnippet(s snippetSpec, k snippetKey) (string, error) {
	set := s.sets[0]
	maxTokens, _ := value(set, "max_tokens")
	fill, _ := value(set, "fill_interval")
	interval, _ := time.ParseDuration(fill)
	lines := []string{
		"`rlsim import` reads this back as that spec and key.",
		"",
		"http_filters: the filter, in the HTTP connection manager, before envoy.filters.http.router; it limits nothing by itself. routes: the bucket, in each route it limits (typed_per_filter_config).",
	}
	if v, ok := value(set, "version"); ok {
		lines = append(lines, "", "The spec's version="+v+" is the Envoy release the figures assume: run that one.")
	}
	var b strings.Builder
	b.WriteString(snippetHead("#", s, k, "each route: every route that carries the bucket has one of its own, in each Envoy process", lines...))
	fmt.Fprintf(&b, `http_filters:
  - name: envoy.filters.http.local_ratelimit
    typed_config:
      "@type": %s
      stat_prefix: http_local_rate_limiter
routes:
  - match: {prefix: /}
    route: {cluster: backend}
    typed_per_filter_config:
      envoy.filters.http.local_ratelimit:
        "@type": %s
        stat_prefix: rlsim_route_limit
        token_bucket:
          max_tokens: %s
`, envoyLocalType, envoyLocalType, maxTokens)
	if v, ok := value(set, "tokens_per_fill"); ok {
		fmt.Fprintf(&b, "          tokens_per_fill: %s\n", v)
	}
	fmt.Fprintf(&b, `          fill_interval: %s
        filter_enabled:
          runtime_key: rlsim_limit_enabled
          default_value: {numerator: 100, denominator: HUNDRED}
        filter_enforced:
          runtime_key: rlsim_limit_enforced
          default_value: {numerator: 100, denominator: HUNDRED}
`, envoySeconds(interval))
	return b.String(), nil
}
