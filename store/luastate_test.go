package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// miniCall runs one command on an embedded miniredis through its server's Dispatch, as a
// connection of its own would: the reference luaState is held to, since an EVALSHA
// through it runs the script in a Lua state miniredis builds for the call.
type miniCall struct {
	srv  *server.Server
	out  bytes.Buffer
	peer *server.Peer
}

func newMiniCall(srv *server.Server) *miniCall {
	c := &miniCall{srv: srv}
	c.peer = server.NewPeer(bufio.NewWriter(&c.out))
	return c
}

func (c *miniCall) do(args ...string) (any, error) {
	c.out.Reset()
	c.srv.Dispatch(c.peer, args)
	c.peer.Flush()
	v, rest, err := readMiniReply(c.out.Bytes())
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d bytes past the reply", len(rest))
	}
	return v, err
}

// luaPair is one script on two servers with the same data: miniredis's EVALSHA on one,
// a luaState on the other.
type luaPair struct {
	ref, fast *miniredis.Miniredis
	call      *miniCall
	sha       string
	state     *luaState
}

func newLuaPair(t *testing.T, src string) *luaPair {
	t.Helper()
	p := &luaPair{ref: miniredis.RunT(t), fast: miniredis.RunT(t)}
	p.call = newMiniCall(p.ref.Server())
	v, err := p.call.do("SCRIPT", "LOAD", src)
	if err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	p.sha = v.(string)
	if p.state, err = newLuaState(p.fast.Server(), p.sha, src); err != nil {
		t.Fatal(err)
	}
	return p
}

// both runs the script on both servers at now and fails the test unless the replies,
// the errors and then the servers' data and TTLs are the same.
func (p *luaPair) both(t *testing.T, now time.Time, keys []string, argv ...string) (any, error) {
	t.Helper()
	p.ref.SetTime(now)
	p.fast.SetTime(now)
	args := append([]string{"EVALSHA", p.sha, fmt.Sprint(len(keys))}, keys...)
	want, wantErr := p.call.do(append(args, argv...)...)
	got, gotErr := p.state.run(keys, argv)
	if !reflect.DeepEqual(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("keys %q argv %q:\n got %#v, %v\nwant %#v, %v", keys, argv, got, gotErr, want, wantErr)
	}
	if g, w := p.fast.Dump(), p.ref.Dump(); g != w {
		t.Fatalf("keys %q argv %q: the data differ:\n got %s\nwant %s", keys, argv, g, w)
	}
	for _, k := range p.ref.Keys() {
		if g, w := p.fast.TTL(k), p.ref.TTL(k); g != w {
			t.Fatalf("%s: TTL %v, want %v", k, g, w)
		}
	}
	return got, gotErr
}

// TestLuaStateRunsAsMiniredis: a script run in the kept state answers, fails and
// changes the data exactly as miniredis's own EVALSHA — replies of every shape, the
// errors of Lua, of redis.call and of the guard on globals byte for byte, commands a
// script may not send — call after call, on more than one key.
func TestLuaStateRunsAsMiniredis(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct{ name, src string }{
		{"fixed window", fixedWindowLua},
		{"shapes", `local i = tonumber(ARGV[1]) % 14
if i == 0 then return 7.9 end
if i == 1 then return true end
if i == 2 then return false end
if i == 3 then return nil end
if i == 4 then return 'text ' .. KEYS[1] end
if i == 5 then return {1, {2, 'x', {}}, false, 3} end
if i == 6 then return {1, nil, 3} end
if i == 7 then return redis.error_reply('CODE my message') end
if i == 8 then return redis.error_reply('-LONELY') end
if i == 9 then return redis.status_reply('FINE') end
if i == 10 then return {err = 'raw err'} end
if i == 11 then return redis.call('HGETALL', KEYS[1] .. ':h') end
if i == 12 then return {redis.call('SET', KEYS[1], 1.5), redis.call('GET', KEYS[1]), redis.call('GET', 'none')} end
return #KEYS + #ARGV`},
		{"errors", `local i = tonumber(ARGV[1]) % 16
redis.call('HSET', KEYS[1] .. ':h', 'f' .. i, i)
if i == 0 then return redis.call('INCR', KEYS[1] .. ':h') end
if i == 1 then return redis.pcall('INCR', KEYS[1] .. ':h') end
if i == 2 then return redis.call('NOSUCHCOMMAND', 'a') end
if i == 3 then return redis.pcall('NOSUCHCOMMAND') end
if i == 4 then return redis.call('SET', KEYS[1], {}) end
if i == 5 then return redis.call() end
if i == 6 then return nil + 1 end
if i == 7 then error('100% broken') end
if i == 8 then return undefined_global end
if i == 9 then new_global = 1 end
if i == 10 then return redis.call('MULTI') end
if i == 11 then return redis.pcall('EVAL', 'return 1', 0) end
if i == 12 then return redis.error_reply(5) end
if i == 13 then return redis.call('GET', KEYS[1] .. ':h') end
if i == 14 then return {pcall(redis.call, 'INCR', KEYS[1] .. ':h')} end
return redis.sha1hex(KEYS[1])`},
		{"libraries", `local t = cjson.decode('{"a":[1,2,3]}')
redis.log(redis.LOG_WARNING, 'noted')
redis.setresp(2)
local s = string.format('%d:%s:%s', #t.a, cjson.encode({1, 2}), tostring(os.clock()))
table.insert(t.a, math.floor(tonumber(ARGV[1]) / 3))
redis.call('RPUSH', KEYS[1] .. ':l', s, t.a[4], unpack(t.a))
redis.call('PEXPIRE', KEYS[1] .. ':l', 1500)
local time = redis.call('TIME')
return {redis.call('LLEN', KEYS[1] .. ':l'), redis.call('PTTL', KEYS[1] .. ':l'), time[1], time[2], redis.replicate_commands() and 1}`},
		{"databases", `redis.call('SELECT', tonumber(ARGV[1]) % 2)
redis.call('INCR', KEYS[1])
return {redis.call('GET', KEYS[1]), redis.pcall('GET', KEYS[1])}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newLuaPair(t, c.src)
			replies, failed := map[string]bool{}, 0
			for i := range 40 {
				key := fmt.Sprintf("rlsim:t:{user_%d}", i%3)
				v, err := p.both(t, now.Add(time.Duration(i)*100*time.Millisecond), []string{key},
					fmt.Sprint(i), "1", "10", "1000000", "10")
				replies[fmt.Sprintf("%#v %v", v, err)] = true
				if err != nil {
					failed++
				}
			}
			if len(replies) < 3 {
				t.Errorf("%d different replies in 40 calls: the calls test little", len(replies))
			}
			if c.name == "errors" && failed < 10 {
				t.Errorf("%d of 40 calls failed: the errors are not reached", failed)
			}
		})
	}
}

// TestLuaStateKeepsNothingBetweenCalls: whatever a call does to the state it runs in — a
// library table's field, a global set raw, the globals' guard, a metatable, the
// thread's environment — the next call sees the state as miniredis builds it for every
// call; a script that leaves the state alone has it built once.
func TestLuaStateKeepsNothingBetweenCalls(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct{ name, src string }{
		{"a library's field", "redis.seen = (redis.seen or 0) + 1\nreturn redis.seen"},
		{"a library function", "local was = tostring(math.floor == nil)\nmath.floor = nil\nreturn was"},
		{"a raw global", "local was = rawget(_G, 'count') or 0\nrawset(_G, 'count', was + 1)\nreturn was"},
		{"the guard", "local was = pcall(function() return nope end)\nsetmetatable(_G, nil)\nreturn tostring(was)"},
		{"the string metatable", "local was = ('x'):len()\ngetmetatable('').__index = {len = function() return 9 end}\nreturn was"},
		{"the environment", "local was = tostring(redis ~= nil)\nsetfenv(0, {})\nreturn was"},
		{"a loaded module", "local was = tostring(package.loaded.json.seen)\npackage.loaded.json.seen = 1\nreturn was"},
		{"a number metatable", "local d = require('debug')\nlocal was = tostring(d.getmetatable(1))\nd.setmetatable(1, {})\nreturn was"},
		{"an upvalue", "local d = require('debug')\nlocal mt = getmetatable(_G)\nlocal was = tostring(d.getupvalue(mt.__index, 1))\nd.setupvalue(mt.__index, 1, {getinfo = function() return nil end})\nreturn was"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newLuaPair(t, c.src)
			var first any
			for i := range 3 {
				v, _ := p.both(t, now, []string{"rlsim:t:{a}"}, fmt.Sprint(i))
				if i == 0 {
					first = v
				} else if !reflect.DeepEqual(v, first) {
					t.Fatalf("call %d answered %#v after %#v", i+1, v, first)
				}
			}
			if p.state.builds != 3 {
				t.Errorf("%d builds for 3 calls that each changed the state", p.state.builds)
			}
		})
	}
	p := newLuaPair(t, fixedWindowLua)
	for i := range 5 {
		p.both(t, now.Add(time.Duration(i)*time.Second), []string{fmt.Sprintf("rlsim:t:{u%d}", i%2)}, fmt.Sprint(now.UnixMicro()), "1", "10", "1000000", "10")
	}
	if p.state.builds != 1 {
		t.Errorf("%d builds for 5 calls that left the state alone", p.state.builds)
	}
}

// TestLuaStateCompileError: a script that does not compile is refused with the message
// miniredis's EVAL gives it.
func TestLuaStateCompileError(t *testing.T) {
	m := miniredis.RunT(t)
	for _, src := range []string{"return (", "local x = = 1", "return 1 +"} {
		_, want := newMiniCall(m.Server()).do("EVAL", src, "0")
		_, err := newLuaState(m.Server(), "sha", src)
		var re redis.Error
		if want == nil || !errors.As(err, &re) || err.Error() != want.Error() {
			t.Errorf("%q: error %v, want %v", src, err, want)
		}
	}
}

// TestLuaStateReplyWithoutAReply: a script that returns what has no reply (a function, a
// coroutine) fails naming what it returned, where miniredis would panic; the next call
// is answered.
func TestLuaStateReplyWithoutAReply(t *testing.T) {
	m := miniredis.RunT(t)
	s, err := newLuaState(m.Server(), "sha", "if ARGV[1] == 'f' then return print end\nif ARGV[1] == 'c' then return coroutine.create(print) end\nreturn 1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg  string
		want any
		err  string
	}{
		{"f", nil, "ERR the script returned a Lua function, which has no reply"},
		{"1", int64(1), "<nil>"},
		{"c", nil, "ERR the script returned a Lua thread, which has no reply"},
		{"1", int64(1), "<nil>"},
	} {
		v, err := s.run([]string{"k"}, []string{c.arg})
		if v != c.want || fmt.Sprint(err) != c.err {
			t.Errorf("%s: %#v, %v; want %#v, %s", c.arg, v, err, c.want, c.err)
		}
	}
}
