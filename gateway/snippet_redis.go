package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// redisScripts are the built-in algorithms the store runs as one Lua script on Redis:
// the script's file in store/lua, the tag its keys carry, and whether it reads a burst.
var redisScripts = map[string]struct {
	script, tag string
	burst       bool
}{
	"token-bucket":   {"token_bucket", "tb", true},
	"gcra":           {"gcra", "gcra", true},
	"fixed-window":   {"fixed_window", "fw", false},
	"sliding-window": {"sliding_window", "sw", false},
	"sliding-log":    {"sliding_log", "sl", false},
}

func init() {
	for name, s := range redisScripts {
		params := []string{"limit", "window"}
		if s.burst {
			params = append(params, "burst")
		}
		registerSnippet(snippetWriter{
			product: name, name: "the Redis script " + s.script + ".lua",
			params: params,
			keys:   keyKinds,
			check:  checkRedisSnippet,
			write:  writeRedisSnippet,
		})
	}
}

// redisMaxCount is the most units a policy may give (2⁵², as --limit and --burst take).
const redisMaxCount = 1 << 52

// checkRedisSnippet reads a built-in algorithm's policy as --limit, --window and --burst
// give it: limit units per window, at most burst at once (default: limit).
func checkRedisSnippet(set []Param) error {
	limit, ok := value(set, "limit")
	if !ok {
		return errors.New("limit and window are required: the policy, as --limit and --window give it (limit=100 window=1s)")
	}
	if _, ok := wholeNumber(limit, 1, redisMaxCount); !ok {
		return fmt.Errorf("limit: want a whole number of requests from 1 to 2⁵², got %q", limit)
	}
	window, ok := value(set, "window")
	if !ok {
		return errors.New("limit and window are required: the policy, as --limit and --window give it (limit=100 window=1s)")
	}
	if d, err := time.ParseDuration(window); err != nil || d < time.Microsecond || d%time.Microsecond != 0 {
		return fmt.Errorf("window: want a duration in whole microseconds, the scripts' unit (1s, 250ms), got %q", window)
	}
	if b, ok := value(set, "burst"); ok {
		if _, ok := wholeNumber(b, 1, redisMaxCount); !ok {
			return fmt.Errorf("burst: want a whole number of requests from 1 to 2⁵², got %q", b)
		}
	}
	return nil
}

// redisKeyWords says what the client part of a key's name holds for k.
func redisKeyWords(k snippetKey) string {
	switch k.kind {
	case "ip":
		return "the client address your application sees"
	case "ipv6":
		return fmt.Sprintf("the client address, an IPv6 one cut to its /%d prefix", k.n)
	case "xff":
		return fmt.Sprintf("the X-Forwarded-For address %d from the right, the one the first of %d trusted proxies appended", k.n, k.n)
	case "xff-leftmost":
		return "the first X-Forwarded-For address, which the client wrote itself (the peer without the header)"
	case "route":
		return "the request's path"
	}
	return "the request's " + k.header + " header"
}

// writeRedisSnippet writes, as redis-cli commands in a shell, how an application runs the
// store's script for a built-in algorithm: the script to load, and the EVALSHA call for
// each request, with the keys named as rlsim names them and the arguments in the
// scripts' units.
func writeRedisSnippet(s snippetSpec, k snippetKey) (string, error) {
	product, _, _ := strings.Cut(s.text, ":")
	rs := redisScripts[product]
	set := s.sets[0]
	limit, _ := value(set, "limit")
	window, _ := value(set, "window")
	w, _ := time.ParseDuration(window)
	burst, ok := value(set, "burst")
	if !ok {
		burst = limit
	}
	us := w.Microseconds()
	keys := fmt.Sprintf(`1 "rl:{$CLIENT}:%s"`, rs.tag)
	var naming string
	switch rs.script {
	case "fixed_window":
		keys = `1 "rl:{$CLIENT}:fw:$WINDOW"`
		naming = fmt.Sprintf("$WINDOW is floor(now in µs / %d): the window that holds now.", us)
	case "sliding_window":
		keys = `2 "rl:{$CLIENT}:sw:$PREVIOUS" "rl:{$CLIENT}:sw:$WINDOW"`
		naming = fmt.Sprintf("$WINDOW is floor(now in µs / %d), the window that holds now; $PREVIOUS is $WINDOW − 1.", us)
	}
	lines := []string{
		"The script is store/lua/" + rs.script + ".lua of rlsim's source, the one rlsim runs on a real Redis (RLSIM_REDIS_URL). Load it once; SCRIPT LOAD answers the SHA1 that EVALSHA names. Your application makes the call for each request, with its own client.",
		"",
		"$CLIENT is " + redisKeyWords(k) + "; the braces make it the hash tag, so every key of one call falls in one slot of Redis Cluster.",
	}
	if naming != "" {
		lines = append(lines, naming)
	}
	lines = append(lines,
		"",
		fmt.Sprintf("ARGV: now (empty: Redis's clock), limit %s, window %d µs, burst %s, cost 1, keep 0 ms, the ns of now past its µs (empty: 0).", limit, us, burst),
		"The reply: {allowed 0|1, remaining, retry_after µs (-1: never), reset µs}. Refuse with 429 when allowed is 0, with Retry-After from retry_after.",
	)
	var b strings.Builder
	b.WriteString(snippetHead("#", s, k, redisKeyWords(k), lines...))
	fmt.Fprintf(&b, "SHA=$(redis-cli SCRIPT LOAD \"$(cat store/lua/%s.lua)\")\n", rs.script)
	fmt.Fprintf(&b, "redis-cli EVALSHA \"$SHA\" %s \"\" %s %d %s 1 0 \"\"\n", keys, limit, us, burst)
	return b.String(), nil
}
