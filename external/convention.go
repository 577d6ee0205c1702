package external

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rlsim/rlsim/store"
)

// conventionProbe goes before a user's script in CheckConvention's dry calls: it records,
// in a set the script does not know, every KEYS or ARGV index the script reads beyond
// what rlsim passes (one key; now, cost, limit, window, burst), and answers nil as Lua
// would, so that the script runs on as it would have.
const conventionProbe = `do
  local probe = "rlsim-convention-probe"
  local function watch(name, passed)
    setmetatable(passed, {__index = function(_, i)
      redis.call("SADD", probe, name .. "[" .. tostring(i) .. "]")
      return nil
    end})
  end
  watch("KEYS", KEYS)
  watch("ARGV", ARGV)
end
`

// conventionCalls are the dry calls' arguments: a key's first two requests at 10 per
// minute, a second apart.
var conventionCalls = [][]any{
	{int64(1767261600000000), 1, 10, 60_000_000, 10},
	{int64(1767261601000000), 1, 10, 60_000_000, 10},
}

// CheckConvention runs the script twice, dry, on a scratch embedded store before the
// run, and fails with one message naming what the script expects when it reads a KEYS
// or ARGV index rlsim does not pass and then fails, or answers something that is not a
// decision. A script written for another caller — the design notes' two-counter
// script reads KEYS[2] and three ARGV of its own — is thus told apart from a script with
// a bug, before any request of the run. A script that reads a missing index but answers
// well (`KEYS[2] or …`) passes.
func (l *Lua) CheckConvention() error {
	m, err := miniredis.Run()
	if err != nil {
		return fmt.Errorf("%s: a scratch store for the convention check: %w", l.Describe(), err)
	}
	defer m.Close()
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src := l.Script.Source
	// A shebang line (#!lua flags=…) is Redis 7's, which the embedded store does not
	// read; its flags change nothing the dry call looks at. A blank line keeps the
	// script's line numbers.
	if strings.HasPrefix(src, "#!") {
		if i := strings.IndexByte(src, '\n'); i >= 0 {
			src = "\n" + src[i+1:]
		}
	}
	probed := conventionProbe + src
	for _, args := range conventionCalls {
		v, callErr := c.Eval(ctx, probed, []string{"rlsim-convention:user_1"}, args...).Result()
		reads, err := c.SMembers(ctx, "rlsim-convention-probe").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("%s: the convention check: %w", l.Describe(), err)
		}
		if callErr != nil && errors.Is(callErr, redis.Nil) {
			callErr, v = nil, nil
		}
		var shapeErr error
		if callErr == nil {
			_, shapeErr = store.UserReply(v)
		}
		if len(reads) > 0 && (callErr != nil || shapeErr != nil) {
			return fmt.Errorf("%s: %s; rlsim passes one key, KEYS[1] (the request's), and five arguments: ARGV[1] now (µs), "+
				"ARGV[2] cost, ARGV[3] limit, ARGV[4] window (µs), ARGV[5] burst — a script written for another caller needs an adapter "+
				"that computes its own KEYS and ARGV from these (docs/own-limiters.md; examples/lua/notes_two_counter.lua adapts "+
				"the design notes' two-counter script); the script then failed: %s",
				l.Describe(), describeReads(reads), conventionFailure(cmpOr(callErr, shapeErr)))
		}
		if shapeErr != nil {
			return fmt.Errorf("%s: a first request (key %q, now %d µs, cost 1, limit 10, window 60000000 µs, burst 10) is answered with %v",
				l.Describe(), "user_1", args[0], shapeErr)
		}
		// A script that fails on its own is reported by the run, at the request it fails.
	}
	return nil
}

// describeReads says which missing indices a script read: "reads KEYS[2], ARGV[6]".
func describeReads(reads []string) string {
	slices.SortFunc(reads, func(a, b string) int {
		na, ia := splitIndex(a)
		nb, ib := splitIndex(b)
		if na != nb {
			return strings.Compare(nb, na) // KEYS first
		}
		return ia - ib
	})
	return "it reads " + strings.Join(reads, ", ")
}

func splitIndex(s string) (string, int) {
	name, rest, _ := strings.Cut(s, "[")
	i, _ := strconv.Atoi(strings.TrimSuffix(rest, "]"))
	return name, i
}

// conventionFailure is the server's message for a failed call, cut to what the script
// did: without the server's wrapping, the probed source's line numbers (not the script's)
// and the stack trace.
func conventionFailure(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "ERR ")
	msg = strings.TrimPrefix(msg, "Error compiling script (new function): ")
	if i := strings.Index(msg, " script: "); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, "user_script:"); i >= 0 {
		msg = msg[:i] + msg[i+len("user_script:"):]
	}
	return strings.TrimLeft(msg, ":0123456789 ")
}

// cmpOr is the first non-nil error.
func cmpOr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
