package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"

	"github.com/rlsim/rlsim/algorithms"
)

// UserScript is a rate limiter a user brings as a Lua script, called by rlsim's calling
// convention (stable; docs/own-limiters.md):
//
//	KEYS[1]  the request's key, under a prefix the run owns, in braces as its Redis
//	         Cluster hash tag: rlsim:<script>:{user_8812}
//	ARGV[1]  now: whole microseconds since the Unix epoch, on the virtual clock
//	ARGV[2]  cost    ARGV[3]  limit    ARGV[4]  window (µs)    ARGV[5]  burst
//
// It returns 1 (admitted) or 0 (refused), or an array whose first element is that
// integer, optionally followed by the units remaining and the retry-after in µs (-1: the
// request can never pass). Anything else is an error of the script (UserReply).
type UserScript struct {
	// Name is the algorithm's name in reports: the file's name without .lua.
	Name string
	// Path is the file as the command line named it.
	Path string
	// Source is the Lua text, sent to the server as it is.
	Source string
	// ReadsTime is the line of the first redis.call('TIME') in the source (0: none seen).
	// Virtual time cannot reach a real server's clock; see the README.
	ReadsTime int
	// SetsTTL is the line of the first command that gives a key a time to live (EXPIRE,
	// PEXPIRE, SET … EX, …), 0 when none is seen. A real server counts TTLs on its wall
	// clock, not on the virtual one.
	SetsTTL int

	lua *redis.Script
}

// LoadUserScript reads a user's script from path. The script is compiled only when a face
// loads it (NewUserFace), which reports a syntax error with the server's message.
func LoadUserScript(path string) (*UserScript, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if name == "" || strings.TrimSpace(string(src)) == "" {
		return nil, fmt.Errorf("%s: an empty script (or a file named only .lua) is no limiter", path)
	}
	s := &UserScript{Name: name, Path: path, Source: string(src), lua: redis.NewScript(string(src))}
	s.ReadsTime, s.SetsTTL = scanSource(s.Source)
	return s, nil
}

var (
	timeCall = regexp.MustCompile(`(?i)\bredis\s*\.\s*p?call\s*\(\s*["']time["']`)
	ttlWord  = regexp.MustCompile(`(?i)["'](p?expire|p?expireat|setex|psetex|getex|ex|px|exat|pxat)["']`)
)

// scanSource returns the lines (1-based) of the first TIME call and the first TTL-setting
// word outside comments, 0 for none. It reads the text, not the program: a command name
// built at run time escapes it (miniredis's face also watches what the script does).
func scanSource(src string) (readsTime, setsTTL int) {
	inBlock := false
	for i, line := range strings.Split(src, "\n") {
		code := line
		if inBlock {
			end := strings.Index(code, "]]")
			if end < 0 {
				continue
			}
			code, inBlock = code[end+2:], false
		}
		if c := strings.Index(code, "--"); c >= 0 {
			inBlock = strings.HasPrefix(code[c:], "--[[") && !strings.Contains(code[c:], "]]")
			code = code[:c]
		}
		if readsTime == 0 && timeCall.MatchString(code) {
			readsTime = i + 1
		}
		if setsTTL == 0 && ttlWord.MatchString(code) {
			setsTTL = i + 1
		}
	}
	return readsTime, setsTTL
}

// UserCall is one call of a user's script: the request's key under the run's prefix, its
// cost, and the virtual time Now (ns since the Unix epoch) the embedded server's clock is
// moved to before the call and which the script gets as ARGV[1] in whole µs.
type UserCall struct {
	Key  string
	Now  int64
	Cost int64
}

// UserResult is the outcome of one UserCall.
type UserResult struct {
	Reply Reply
	// Err is the script's own failure (an error it raised, a reply of the wrong shape);
	// the call is then refused.
	Err error
	// ReadTime reports that the call sent TIME to the server (seen on miniredis only).
	ReadTime bool
	// CrossSlot, when not empty, says which key the call touched in another Redis
	// Cluster hash slot than its KEYS[1]'s (seen on miniredis only): on a cluster the
	// call fails with CROSSSLOT.
	CrossSlot string
}

// UserFace runs one user script on a Redis face: an embedded miniredis, whose clock each
// call moves to its virtual time (TIME answers it, TTLs count down by it), or a real
// server, whose TIME and TTLs stay on its wall clock and which is sent the calls of a batch
// as one pipeline. It is not safe for concurrent use.
type UserFace struct {
	r      *Redis
	s      *UserScript
	policy [3]string // limit, window (µs), burst: the arguments every call repeats
	times  atomic.Int64
	// key is the KEYS[1] of the call on its way on miniredis, whose pre-hook sees every
	// command the script sends; cross the first key it touched in another slot.
	key, cross atomic.Pointer[string]
	// lua runs the script on miniredis in this process (nil on a real server); keys and
	// args are its call's, reused.
	lua  *luaState
	keys [1]string
	args [5]string
}

// NewUserFace loads s on r (a syntax error is reported here, in the server's words) and
// fixes the policy its calls pass. The policy must pass CheckPolicy.
func NewUserFace(r *Redis, s *UserScript, p algorithms.Policy) (*UserFace, error) {
	if err := CheckPolicy(p); err != nil {
		return nil, err
	}
	f := &UserFace{r: r, s: s, policy: [3]string{
		strconv.FormatInt(p.Limit, 10), strconv.FormatInt(p.Window.Microseconds(), 10), strconv.FormatInt(p.EffectiveBurst(), 10),
	}}
	ctx, cancel := r.ctx()
	defer cancel()
	if err := s.lua.Load(ctx, r.client).Err(); err != nil {
		return nil, r.wrap(fmt.Errorf("the server cannot load the script: %w", err))
	}
	if r.mini != nil {
		lua, err := newLuaState(r.mini.Server(), s.lua.Hash(), s.Source)
		if err != nil {
			return nil, r.wrap(fmt.Errorf("the server cannot load the script: %w", err))
		}
		f.lua = lua
		// Every call comes with ttlClock's before and after (evalMini), so the face's
		// TTLs can be counted without FastForward's walk of every key.
		t := newTTLClock(r.mini)
		r.mu.Lock()
		r.ttls = t
		r.mu.Unlock()
		// Every command a script sends passes the server's dispatch, so a pre-hook sees
		// the TIME calls the source hides from scanSource, and the names whose TTLs the
		// call may have set.
		r.mini.Server().SetPreHook(func(_ *server.Peer, cmd string, args ...string) bool {
			t.saw(cmd, args)
			if cmd == "TIME" {
				f.times.Add(1)
			}
			if key := f.key.Load(); key != nil {
				for _, k := range keysOf(cmd, args) {
					if Slot(k) != Slot(*key) && f.cross.Load() == nil {
						what := fmt.Sprintf("%s %s (slot %d) beside KEYS[1] %s (slot %d)", cmd, k, Slot(k), *key, Slot(*key))
						f.cross.Store(&what)
					}
				}
			}
			return false
		})
	}
	return f, nil
}

// Redis is the face the script runs on.
func (f *UserFace) Redis() *Redis { return f.r }

// keyless are the commands a script may send that name no key first.
var keyless = map[string]bool{
	"TIME": true, "PING": true, "ECHO": true, "INFO": true, "SELECT": true, "SCAN": true, "KEYS": true,
	"RANDOMKEY": true, "DBSIZE": true, "FLUSHDB": true, "FLUSHALL": true, "PUBLISH": true, "CONFIG": true,
	"COMMAND": true, "CLIENT": true, "HELLO": true, "AUTH": true, "SCRIPT": true, "EVAL": true, "EVALSHA": true,
	"EVAL_RO": true, "EVALSHA_RO": true, "MULTI": true, "EXEC": true, "DISCARD": true, "WAIT": true,
	"MEMORY": true, "OBJECT": true, "DEBUG": true, "SWAPDB": true, "READONLY": true, clockCommand: true,
}

// keysOf is the keys a command names: every argument of the commands that take only keys,
// every other one of MSET, else the first (none for the keyless commands).
func keysOf(cmd string, args []string) []string {
	switch {
	case len(args) == 0 || keyless[cmd]:
		return nil
	case cmd == "MGET" || cmd == "DEL" || cmd == "UNLINK" || cmd == "EXISTS" || cmd == "TOUCH" || cmd == "WATCH":
		return args
	case cmd == "MSET" || cmd == "MSETNX":
		var keys []string
		for i := 0; i < len(args); i += 2 {
			keys = append(keys, args[i])
		}
		return keys
	}
	return args[:1]
}

// TaggedKey is the KEYS[1] a user's script gets for the client key key under prefix: the
// key as the name's Redis Cluster hash tag, as the shipped scripts name theirs, so that the
// keys a script derives from KEYS[1] by appending to it share its slot.
func TaggedKey(prefix, key string) string { return string(appendTagged([]byte(prefix), key)) }

// Eval runs calls in order and fills out (len(out) = len(calls)). A real server gets
// them as one pipeline; miniredis one by one, its clock moved to each call's time first.
// The error is the face's (a connection that failed, a server that lost the script); a
// call's own failure is in its UserResult.
func (f *UserFace) Eval(calls []UserCall, out []UserResult) error {
	if f.r.mini != nil {
		for i, c := range calls {
			before := f.times.Load()
			f.cross.Store(nil)
			f.key.Store(&c.Key)
			v, err := f.evalMini(c)
			f.key.Store(nil)
			if err := f.callFailed(err); err != nil {
				return err
			}
			out[i] = f.result(v, err)
			out[i].ReadTime = f.times.Load() != before
			if cross := f.cross.Load(); cross != nil {
				out[i].CrossSlot = *cross
			}
		}
		return nil
	}
	ctx, cancel := f.r.ctxFor(f.r.timeout + time.Duration(len(calls))*time.Millisecond)
	defer cancel()
	pipe := f.r.client.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = pipe.EvalSha(ctx, f.s.lua.Hash(), []string{c.Key}, f.argv(c)...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isReplyError(err) {
		return f.r.wrap(fmt.Errorf("a pipeline of %d calls: %w", len(calls), err))
	}
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if err := f.callFailed(err); err != nil {
			return err
		}
		out[i] = f.result(v, err)
		f.r.SetNow(calls[i].Now)
	}
	return nil
}

// evalMini runs c on the embedded server in this process (luaState), its clock moved to
// c's time first, and its TTLs counted around it (ttlClock).
func (f *UserFace) evalMini(c UserCall) (any, error) {
	r := f.r
	r.advance(c.Now)
	r.mu.Lock()
	now, t := r.last, r.ttls
	if t != nil {
		t.before(now, c.Key)
	}
	r.mu.Unlock()
	f.keys[0] = c.Key
	f.args = [5]string{strconv.FormatInt(floorDiv(c.Now, 1000), 10), strconv.FormatInt(max(c.Cost, 1), 10), f.policy[0], f.policy[1], f.policy[2]}
	end := r.watch.Begin()
	v, err := f.lua.run(f.keys[:], f.args[:])
	end()
	if t != nil {
		r.mu.Lock()
		t.after(now)
		if t.Off() {
			// From here on FastForward counts the TTLs; it starts from exact ones.
			t.sync(now)
			r.ttls = nil
		}
		r.mu.Unlock()
	}
	return v, err
}

// callFailed is the face's error in a call's error: a connection that failed or a server
// that no longer has the script; nil when the call reached the script.
func (f *UserFace) callFailed(err error) error {
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		return nil
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		return errors.New("the server lost the script in the middle of the run (SCRIPT FLUSH or a restart)")
	case isReplyError(err):
		return nil
	}
	return f.r.wrap(err)
}

func (f *UserFace) argv(c UserCall) []any {
	return []any{strconv.FormatInt(floorDiv(c.Now, 1000), 10), strconv.FormatInt(max(c.Cost, 1), 10), f.policy[0], f.policy[1], f.policy[2]}
}

func (f *UserFace) result(v any, err error) UserResult {
	if err != nil && !errors.Is(err, redis.Nil) {
		return UserResult{Err: fmt.Errorf("the script failed: %s", strings.TrimPrefix(err.Error(), "ERR "))}
	}
	r, err := UserReply(v)
	return UserResult{Reply: r, Err: err}
}

// UserReply reads a user script's reply by the calling convention: 1 or 0, or an array
// {1|0, remaining, retry_after_µs} whose last two elements are optional. A refusal's
// RetryAfter is the script's (zero when it gives none, algorithms.Never for -1); an
// admission's is zero; Remaining is never negative. Anything else is an error that says
// what the script returned instead.
func UserReply(v any) (Reply, error) {
	const want = "want 1 or 0, or an array {1|0, remaining, retry_after_µs}"
	var ints []int64
	switch x := v.(type) {
	case int64:
		ints = []int64{x}
	case []any:
		if len(x) == 0 || len(x) > 3 {
			return Reply{}, fmt.Errorf("the script returned an array of %d elements; %s", len(x), want)
		}
		for i, e := range x {
			n, ok := e.(int64)
			if !ok {
				return Reply{}, fmt.Errorf("element %d of the script's reply is %s, not an integer; %s", i+1, describe(e), want)
			}
			ints = append(ints, n)
		}
	default:
		return Reply{}, fmt.Errorf("the script returned %s; %s", describe(v), want)
	}
	if ints[0] != 0 && ints[0] != 1 {
		return Reply{}, fmt.Errorf("the script returned %d as its decision; %s", ints[0], want)
	}
	r := Reply{Allowed: ints[0] == 1}
	if len(ints) > 1 {
		r.Remaining = max(ints[1], 0)
	}
	if len(ints) > 2 && !r.Allowed {
		switch us := ints[2]; {
		case us == -1:
			r.RetryAfter = algorithms.Never
		case us < 0:
			return Reply{}, fmt.Errorf("the script returned a retry-after of %dµs; want 0 or more, or -1 for never", us)
		case us > int64(algorithms.Never/time.Microsecond):
			r.RetryAfter = algorithms.Never
		default:
			r.RetryAfter = time.Duration(us) * time.Microsecond
		}
	}
	return r, nil
}

// describe names a reply value for an error message: its Lua type and value.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil (false, or no value)"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("the string %q", x)
	case []any:
		return fmt.Sprintf("an array of %d elements", len(x))
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

// UserStore is a Store whose every script call runs the user's script instead: the shared
// placement of a fleet (cluster.Fleet) calls it with the token bucket's keys and arguments
// (a key per client, now, limit, window, burst, cost), and it answers in the token
// bucket's four integers. It lets a fleet run a script it does not know without knowing
// it. Keys, SetNow, Name and Close are the face's.
type UserStore struct {
	face   *UserFace
	first  error // the first failing call, with the request it was
	calls  int64
	result [1]UserResult
	// crossSlot is told of the first call that touched a key in another slot;
	// refuseCrossSlot makes that call an error instead (a fleet that moves slots).
	crossSlot       func(string)
	refuseCrossSlot bool
}

// WatchSlots asks the store to tell seen of the first call whose script touches a key in
// another Redis Cluster slot than its KEYS[1]'s (on miniredis, which sees what a script
// sends), or, with refuse, to fail that call: a fleet that simulates Redis Cluster's slot
// moves would otherwise run a script a cluster refuses with CROSSSLOT.
func (u *UserStore) WatchSlots(refuse bool, seen func(string)) {
	u.refuseCrossSlot, u.crossSlot = refuse, seen
}

var _ Store = (*UserStore)(nil)

// NewUserStore runs s, for policy p, on r for a fleet.
func NewUserStore(r *Redis, s *UserScript, p algorithms.Policy) (*UserStore, error) {
	f, err := NewUserFace(r, s, p)
	if err != nil {
		return nil, err
	}
	return &UserStore{face: f}, nil
}

// Calls is how many calls of the script the store made.
func (u *UserStore) Calls() int64 { return u.calls }

// Face is the user script's face.
func (u *UserStore) Face() *UserFace { return u.face }

// Eval runs the user's script for the call the token bucket's script would get: keys[0]
// is the key, args are now (µs, or the store's clock), limit, window, burst, cost, keep.
// A failing call is an error naming the script and the request, which ends a fleet's run.
func (u *UserStore) Eval(_ *Script, keys []string, args ...int64) ([]int64, error) {
	u.calls++
	now := args[argNow]*1000 + args[argSub]
	if args[argNow] == storeTime {
		now = u.face.r.pipeClock()
	}
	c := UserCall{Key: keys[0], Now: now, Cost: args[argCost]}
	if err := u.face.Eval([]UserCall{c}, u.result[:]); err != nil {
		return nil, err
	}
	res := u.result[0]
	if res.Err != nil {
		return nil, fmt.Errorf("%s: call %d (key %q at %s): %w", u.face.s.Path, u.calls, keys[0], VirtualTime(now), res.Err)
	}
	if res.CrossSlot != "" {
		if u.refuseCrossSlot {
			return nil, fmt.Errorf("%s: call %d (key %q at %s) touched %s: on Redis Cluster, whose slot moves this fleet simulates, the call fails with CROSSSLOT; name every key from KEYS[1], which carries the client key as its hash tag",
				u.face.s.Path, u.calls, keys[0], VirtualTime(now), res.CrossSlot)
		}
		if u.crossSlot != nil {
			u.crossSlot(res.CrossSlot)
			u.crossSlot = nil
		}
	}
	retry := int64(res.Reply.RetryAfter / time.Microsecond)
	if res.Reply.RetryAfter == algorithms.Never {
		retry = Never
	}
	allowed := int64(0)
	if res.Reply.Allowed {
		allowed = 1
	}
	return []int64{allowed, res.Reply.Remaining, retry, 0}, nil
}

// SetNow moves the face's clock.
func (u *UserStore) SetNow(now int64) error { return u.face.r.SetNow(now) }

// Keys lists the keys under prefix.
func (u *UserStore) Keys(prefix string) ([]KeyInfo, error) { return u.face.r.Keys(prefix) }

// Name is the face's: "miniredis" or "redis".
func (u *UserStore) Name() string { return u.face.r.Name() }

// Close closes the face.
func (u *UserStore) Close() error { return u.face.r.Close() }

// VirtualTime prints a virtual time (ns since the Unix epoch) for messages:
// 2026-01-01T10:00:59.9Z.
func VirtualTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
