package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/internal/testnet"
	"github.com/rlsim/rlsim/store"
)

// The Redis snippet read back by running it: the script it names is the store's, and
// its EVALSHA call, made as the snippet writes it (the time given instead of Redis's
// clock, the keys named as it says) for two clients on miniredis, decides every request
// as the algorithm does under the policy the spec gives. Every key makes the same call.
func TestRedisSnippetDecidesAsItsAlgorithm(t *testing.T) {
	specs := []string{
		"token-bucket:limit=10 window=1s burst=20", "token-bucket:limit=20 window=1m",
		"gcra:limit=5 window=1s burst=3", "gcra:limit=10 window=10s",
		"fixed-window:limit=10 window=1s", "fixed-window:limit=20 window=1m",
		"sliding-window:limit=20 window=10s", "sliding-window:limit=4 window=500ms",
		"sliding-log:limit=7 window=2s", "sliding-log:limit=20 window=1m",
	}
	mr := testnet.Miniredis(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	for si, spec := range specs {
		var first []string
		for ki, key := range []string{"ip", "api-key", "xff:2", "header:X-Client"} {
			snippet, err := gateway.Snippet(spec, key)
			if err != nil {
				t.Fatalf("Snippet(%q, %q): %v", spec, key, err)
			}
			if !strings.HasPrefix(snippet, "# rlsim spec: "+spec+"\n# rlsim key:  "+key+"\n") {
				t.Errorf("Snippet(%q, %q) does not name them:\n%s", spec, key, snippet)
			}
			load, call := redisSnippetCall(t, snippet)
			// The key changes what the application puts in $CLIENT, not the call: the
			// traffic runs on the first key's.
			if ki > 0 {
				if strings.Join(call, " ") != strings.Join(first, " ") {
					t.Errorf("Snippet(%q, %q) calls %v, keyed ip %v", spec, key, call, first)
				}
				continue
			}
			first = call
			name := strings.TrimSuffix(strings.TrimPrefix(load, `"$(cat store/lua/`), `.lua)"`)
			script := store.ScriptNamed(name)
			if script == nil {
				t.Fatalf("Snippet(%q, %q) loads %s, which is no script of the store", spec, key, load)
			}
			if data, err := os.ReadFile(filepath.Join("..", "store", "lua", name+".lua")); err != nil || string(data) != script.Source {
				t.Fatalf("store/lua/%s.lua is not the store's script: %v", name, err)
			}
			sha, err := rdb.ScriptLoad(ctx, script.Source).Result()
			if err != nil {
				t.Fatal(err)
			}
			policy := redisPolicy(t, spec)
			kind, _, _ := strings.Cut(spec, ":")
			lim, err := algorithms.New(kind, policy)
			if err != nil {
				t.Fatal(err)
			}
			n, admitted := 0, 0
			for i, at := range redisArrivals(policy.Window) {
				client := []string{"a", "b"}[i%2] + strconv.Itoa(si) + key
				keys, args := redisCallAt(t, call, client, at)
				res, err := rdb.EvalSha(ctx, sha, keys, args...).Int64Slice()
				if err != nil {
					t.Fatalf("%s: EVALSHA %v %v: %v", spec, keys, args, err)
				}
				d := lim.Allow(uint32(i%2), at, 1)
				if (res[0] == 1) != d.Allowed {
					t.Fatalf("Snippet(%q, %q): request %d at %v: the script says allowed=%d, %s %v:\n%s", spec, key, i, time.Duration(at), res[0], kind, d.Allowed, snippet)
				}
				n++
				if d.Allowed {
					admitted++
				}
			}
			if admitted == 0 || admitted == n {
				t.Fatalf("%s: %d of %d admitted: the traffic tests nothing", spec, admitted, n)
			}
		}
	}
}

// redisSnippetCall returns the argument of the snippet's SCRIPT LOAD line and the words
// of its EVALSHA line after the SHA, quotes removed.
func redisSnippetCall(t *testing.T, snippet string) (load string, call []string) {
	t.Helper()
	for _, l := range strings.Split(snippet, "\n") {
		if rest, ok := strings.CutPrefix(l, "SHA=$(redis-cli SCRIPT LOAD "); ok {
			load = strings.TrimSuffix(rest, ")")
		}
		if rest, ok := strings.CutPrefix(l, `redis-cli EVALSHA "$SHA" `); ok {
			for _, w := range strings.Fields(rest) {
				call = append(call, strings.Trim(w, `"`))
			}
		}
	}
	if load == "" || call == nil {
		t.Fatalf("no SCRIPT LOAD and EVALSHA lines in\n%s", snippet)
	}
	return load, call
}

// redisCallAt fills in the snippet's call for client at at (ns since the Unix epoch): its
// keys, and its arguments with now in µs and its ns past the µs.
func redisCallAt(t *testing.T, call []string, client string, at int64) (keys []string, args []any) {
	t.Helper()
	n, err := strconv.Atoi(call[0])
	if err != nil || len(call) != 1+n+7 {
		t.Fatalf("EVALSHA %v: want a number of keys, the keys and 7 arguments", call)
	}
	window, err := strconv.ParseInt(call[1+n+2], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	us := at / 1000
	index := us / window
	for _, k := range call[1 : 1+n] {
		k = strings.ReplaceAll(k, "$CLIENT", client)
		k = strings.ReplaceAll(k, "$PREVIOUS", strconv.FormatInt(index-1, 10))
		keys = append(keys, strings.ReplaceAll(k, "$WINDOW", strconv.FormatInt(index, 10)))
	}
	for i, a := range call[1+n:] {
		switch {
		case i == 0 && a == "":
			a = strconv.FormatInt(us, 10)
		case i == 6 && a == "":
			a = strconv.FormatInt(at%1000, 10)
		}
		args = append(args, a)
	}
	return keys, args
}

// redisPolicy is the policy a Redis spec gives, read from the spec, not the snippet.
func redisPolicy(t *testing.T, spec string) algorithms.Policy {
	t.Helper()
	var p algorithms.Policy
	_, rest, _ := strings.Cut(spec, ":")
	for _, w := range strings.Fields(rest) {
		name, v, _ := strings.Cut(w, "=")
		var err error
		switch name {
		case "limit":
			p.Limit, err = strconv.ParseInt(v, 10, 64)
		case "burst":
			p.Burst, err = strconv.ParseInt(v, 10, 64)
		case "window":
			p.Window, err = time.ParseDuration(v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// redisArrivals are 600 arrivals in whole µs from 2026-01-01: bursts of 30 a
// 500th of the window apart, with gaps of up to two windows between them.
func redisArrivals(window time.Duration) []int64 {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	var out []int64
	for i := range 600 {
		if i%30 == 0 {
			at += int64(window) * int64(i%4) / 2
		}
		at += (int64(window) / 500 / 1000) * 1000
		out = append(out, at)
	}
	return out
}
