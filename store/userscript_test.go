package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// fixedWindowLua is a user's fixed window by the calling convention: a counter per key
// and window, its TTL the window; the reply is {admitted, remaining, retry_after_µs}.
const fixedWindowLua = `
local now, cost, limit, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local key = KEYS[1] .. ':' .. math.floor(now / window)
local n = tonumber(redis.call('GET', key) or '0')
if cost > limit then return {0, limit - n, -1} end
if n + cost > limit then return {0, limit - n, window - now % window} end
redis.call('INCRBY', key, cost)
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return {1, limit - n - cost}
`

// writeScript writes src as name in a temporary folder and returns its path.
func writeScript(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadScript(t *testing.T, name, src string) *UserScript {
	t.Helper()
	s, err := LoadUserScript(writeScript(t, name, src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoadUserScript(t *testing.T) {
	s := loadScript(t, "my_window.lua", fixedWindowLua)
	if s.Name != "my_window" || s.Source != fixedWindowLua || s.ReadsTime != 0 || s.SetsTTL != 8 {
		t.Errorf("name %q, reads time on line %d, sets a TTL on line %d", s.Name, s.ReadsTime, s.SetsTTL)
	}
	for _, tt := range []struct{ name, src, want string }{
		{"empty.lua", "  \n\t\n", "an empty script (or a file named only .lua) is no limiter"},
		{".lua", "return 1", "an empty script (or a file named only .lua) is no limiter"},
	} {
		if _, err := LoadUserScript(writeScript(t, tt.name, tt.src)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
	missing := filepath.Join(t.TempDir(), "none.lua")
	if _, err := LoadUserScript(missing); err == nil || err.Error() != missing+": no such file or directory" {
		t.Errorf("a missing file: %v", err)
	}
}

// The source scan finds the first TIME call and the first TTL-setting word on the lines
// of code, not in comments, whatever the quotes and spacing.
func TestScanSource(t *testing.T) {
	for _, tt := range []struct {
		src           string
		time, setsTTL int
	}{
		{"return 1", 0, 0},
		{"local t = redis.call('TIME')\nredis.call('SET', k, 1, 'EX', 5)", 1, 2},
		{"-- redis.call('TIME')\nlocal x = 1 -- 'EXPIRE'\nredis . pcall ( \"time\" )", 3, 0},
		{"--[[ redis.call('TIME')\nredis.call('PEXPIRE', k, 1)\n]] redis.call('expireat', k, 9)", 0, 3},
		{"--[[ one line ]] redis.call('TIME')\nredis.call(\"PSETEX\", k, 1, 1)", 0, 2},
	} {
		if rt, ttl := scanSource(tt.src); rt != tt.time || ttl != tt.setsTTL {
			t.Errorf("%q: TIME on line %d, TTL on line %d; want %d and %d", tt.src, rt, ttl, tt.time, tt.setsTTL)
		}
	}
}

// A reply is 1 or 0, or {1|0, remaining, retry_after_µs}; anything else says what it was.
func TestUserReply(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want Reply
		err  string
	}{
		{int64(1), Reply{Allowed: true}, ""},
		{int64(0), Reply{}, ""},
		{[]any{int64(1), int64(4)}, Reply{Allowed: true, Remaining: 4}, ""},
		{[]any{int64(1), int64(4), int64(99)}, Reply{Allowed: true, Remaining: 4}, ""},
		{[]any{int64(0), int64(-3), int64(1500)}, Reply{RetryAfter: 1500 * time.Microsecond}, ""},
		{[]any{int64(0), int64(0), int64(-1)}, Reply{RetryAfter: algorithms.Never}, ""},
		{[]any{int64(0), int64(0), int64(1) << 62}, Reply{RetryAfter: algorithms.Never}, ""},
		{[]any{int64(0), int64(0), int64(-5)}, Reply{}, "a retry-after of -5µs; want 0 or more, or -1 for never"},
		{int64(2), Reply{}, "the script returned 2 as its decision"},
		{[]any{}, Reply{}, "an array of 0 elements"},
		{[]any{int64(1), int64(1), int64(1), int64(1)}, Reply{}, "an array of 4 elements"},
		{[]any{int64(1), "x"}, Reply{}, `element 2 of the script's reply is the string "x", not an integer`},
		{nil, Reply{}, "the script returned nil (false, or no value)"},
		{"OK", Reply{}, `the script returned the string "OK"`},
		{strings.Repeat("y", 50), Reply{}, `the string "` + strings.Repeat("y", 40) + `…"`},
		{[]any{[]any{int64(1)}}, Reply{}, "element 1 of the script's reply is an array of 1 elements"},
		{3.5, Reply{}, "the script returned 3.5 (float64)"},
	} {
		got, err := UserReply(tt.v)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%#v: %+v, %v; want %+v", tt.v, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%#v: error %v, want %q", tt.v, err, tt.err)
		}
	}
}

// userFaces are the faces a user script runs on: miniredis always, a real server when
// RLSIM_REDIS_URL names one.
func userFaces(t *testing.T) map[string]*Redis {
	faces := map[string]*Redis{"miniredis": miniFace(t)}
	if os.Getenv("RLSIM_REDIS_URL") != "" {
		faces["redis"] = realRedis(t)
	}
	return faces
}

// A user's fixed window on each face decides request for request as rlsim's fixed window
// does, for several keys and across a window boundary; the arguments are the calling
// convention's (now in µs, cost, limit, window in µs, burst).
func TestUserFaceDecidesByTheCallingConvention(t *testing.T) {
	p := algorithms.Policy{Limit: 3, Window: time.Second}
	s := loadScript(t, "fw.lua", fixedWindowLua)
	for name, r := range userFaces(t) {
		t.Run(name, func(t *testing.T) {
			prefix := testPrefix(t, 1)
			defer deleteUnder(t, r, prefix)
			f, err := NewUserFace(r, s, p)
			if err != nil {
				t.Fatal(err)
			}
			if f.Redis() != r {
				t.Error("the face's Redis is not the one it runs on")
			}
			builtin := algorithms.NewFixedWindow(p)
			base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
			var calls []UserCall
			var want []algorithms.Decision
			for i := range 12 {
				key := uint32(i % 2)
				now := base + int64(i)*int64(150*time.Millisecond)
				cost := int64(1 + i%3)
				if i == 7 {
					cost = 5
				}
				calls = append(calls, UserCall{Key: prefix + []string{"a", "b"}[key], Now: now, Cost: cost})
				want = append(want, builtin.Allow(key, now, cost))
			}
			out := make([]UserResult, len(calls))
			if err := f.Eval(calls, out); err != nil {
				t.Fatal(err)
			}
			admitted := 0
			for i, got := range out {
				w := want[i]
				if got.Err != nil || got.Reply.Allowed != w.Allowed || got.Reply.Remaining != w.Remaining || got.ReadTime {
					t.Errorf("call %d %+v: %+v, want allowed %v remaining %d", i, calls[i], got, w.Allowed, w.Remaining)
				}
				if !w.Allowed && got.Reply.RetryAfter != w.RetryAfter {
					t.Errorf("call %d: retry after %s, want %s", i, got.Reply.RetryAfter, w.RetryAfter)
				}
				if w.Allowed {
					admitted++
				}
			}
			if admitted == 0 || admitted == len(calls) {
				t.Fatalf("%d of %d admitted: the calls test nothing", admitted, len(calls))
			}
		})
	}
}

// A script that fails is that call's error, the run goes on; one that reads TIME is
// seen doing so on miniredis; one that does not compile is refused when loaded, in the
// server's words; a policy the store cannot hold is refused before.
func TestUserFaceFailures(t *testing.T) {
	p := algorithms.Policy{Limit: 3, Window: time.Second}
	r := miniFace(t)
	raising := loadScript(t, "raising.lua", "if tonumber(ARGV[2]) > 1 then return redis.error_reply('too dear') end\nreturn 1")
	f, err := NewUserFace(r, raising, p)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]UserResult, 2)
	if err := f.Eval([]UserCall{{Key: "k", Now: 1e18, Cost: 2}, {Key: "k", Now: 1e18, Cost: 1}}, out); err != nil {
		t.Fatal(err)
	}
	if out[0].Err == nil || out[0].Err.Error() != "the script failed: too dear" || out[1].Err != nil || !out[1].Reply.Allowed {
		t.Errorf("results %+v", out)
	}
	timed := loadScript(t, "timed.lua", "local c = 'TI' .. 'ME'\nredis.call(c)\nreturn 1")
	if timed.ReadsTime != 0 {
		t.Fatalf("the scan saw a TIME call built at run time on line %d", timed.ReadsTime)
	}
	if f, err = NewUserFace(r, timed, p); err != nil {
		t.Fatal(err)
	}
	if err := f.Eval([]UserCall{{Key: "k", Now: 2e18, Cost: 1}}, out[:1]); err != nil || !out[0].ReadTime {
		t.Errorf("TIME call unseen: %+v, %v", out[0], err)
	}
	broken := loadScript(t, "broken.lua", "return (")
	if _, err := NewUserFace(r, broken, p); err == nil || !strings.Contains(err.Error(), "the server cannot load the script") {
		t.Errorf("a syntax error: %v", err)
	}
	if _, err := NewUserFace(r, raising, algorithms.Policy{Limit: 3, Window: time.Nanosecond}); err == nil {
		t.Error("a window under a microsecond was let through")
	}
}

// A fleet's store running the user's script: it is called with the token bucket's keys
// and arguments and answers in the token bucket's four integers; the store's clock, the
// key listing, the name and Close are the face's; a failing call names the script, the
// call, the key and its virtual time.
func TestUserStoreAnswersAsTheTokenBucket(t *testing.T) {
	p := algorithms.Policy{Limit: 2, Window: time.Second}
	r := miniFace(t)
	s := loadScript(t, "fw.lua", fixedWindowLua)
	u, err := NewUserStore(r, s, p)
	if err != nil {
		t.Fatal(err)
	}
	if u.Face() == nil || u.Name() != "miniredis" {
		t.Fatalf("face %v, name %q", u.Face(), u.Name())
	}
	nowUS := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixMicro()
	args := func(now, cost int64) []int64 {
		a := make([]int64, argCount)
		a[argNow], a[argLimit], a[argWindow], a[argBurst], a[argCost] = now, p.Limit, p.Window.Microseconds(), p.Limit, cost
		return a
	}
	for i, tt := range []struct {
		now, cost int64
		want      []int64
	}{
		{nowUS, 1, []int64{1, 1, 0, 0}},
		{nowUS + 1, 1, []int64{1, 0, 0, 0}},
		{nowUS + 2, 1, []int64{0, 0, 999_998, 0}},
		{nowUS + 3, 3, []int64{0, 0, Never, 0}},
	} {
		got, err := u.Eval(nil, []string{"fleet:alice"}, args(tt.now, tt.cost)...)
		if err != nil || len(got) != 4 || got[0] != tt.want[0] || got[1] != tt.want[1] || got[2] != tt.want[2] || got[3] != 0 {
			t.Errorf("call %d: %v, %v; want %v", i, got, err, tt.want)
		}
	}
	if err := u.SetNow(nowUS * 1000); err != nil {
		t.Fatal(err)
	}
	// The store's clock: the face's virtual time, as the token bucket's script asks for.
	if got, err := u.Eval(nil, []string{"fleet:bob"}, args(storeTime, 1)...); err != nil || got[0] != 1 {
		t.Errorf("a call on the store's clock: %v, %v", got, err)
	}
	keys, err := u.Keys("fleet:")
	if err != nil || len(keys) != 2 {
		t.Errorf("keys %v, %v", keys, err)
	}
	if u.Calls() != 5 {
		t.Errorf("%d calls, want 5", u.Calls())
	}
	bad, err := NewUserStore(r, loadScript(t, "bad.lua", "return 'yes'"), p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Eval(nil, []string{"fleet:carol"}, args(nowUS, 1)...)
	if want := `bad.lua: call 1 (key "fleet:carol" at 2026-01-01T10:00:00Z): the script returned the string "yes"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to contain %q", err, want)
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if VirtualTime(1767261659900000000) != "2026-01-01T10:00:59.9Z" {
		t.Errorf("virtual time %s", VirtualTime(1767261659900000000))
	}
}
