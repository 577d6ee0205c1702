package store

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	luajson "github.com/alicebob/miniredis/v2/gopher-json"
	"github.com/alicebob/miniredis/v2/server"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// luaState runs one user script on an embedded miniredis as the server's EVALSHA runs it
// — the same gopher-lua libraries, the same redis.* functions, the same guard on globals,
// the same replies and error messages — but in one Lua state kept from call to call,
// where miniredis builds a fresh state for every call (about 90 µs and 180 KB each, the
// whole cost of a call of a small script, and the garbage that makes calls slower as the
// keys held grow). The data stays in miniredis: every redis.call goes through the
// server's Dispatch, so its pre-hook, TTLs and memory see what they saw.
//
// A call cannot leave anything for the next: KEYS and ARGV are new tables each call, the
// script's chunk is a new closure each call, and after every call the state is compared
// with what it was when built (the globals, every library table, the registry, the
// metatables, the environments and upvalues of the functions in them); a call that
// changed any of it, or failed, has the state built again before the next.
//
// Commands that a script may not send (MULTI, EVAL, SUBSCRIBE, …) are refused here with
// miniredis's message, as miniredis refuses them from its scripts, but whatever their
// arguments (miniredis checks those first). Each command takes miniredis's lock for
// itself, where miniredis holds it for the whole script: the same while, as here, nothing
// else calls the server during a call. It is not safe for concurrent use.
type luaState struct {
	srv   *server.Server
	sha   string
	proto *lua.FunctionProto

	l *lua.LState
	// fresh is false when the state must be built again before the next call; builds
	// counts the builds.
	fresh  bool
	builds int
	// built is the state as built: every table reachable from the globals and the
	// registry, with its entries, metatable, and its functions' environments and upvalues.
	built []tableSeen
	// samples are a value of each basic type, mts their metatables as built.
	samples []lua.LValue
	mts     []lua.LValue

	// nested carries redis.call's commands to the server, pnested redis.pcall's: each
	// keeps one connection context for the length of a call, as miniredis gives each
	// its own (a SELECT in one is not seen by the other).
	nested, pnested nestedConn

	// out is where the script's reply is written, as the server would write it, to be
	// read back (readMiniReply) into what a client of the server would get.
	out     bytes.Buffer
	outPeer *server.Peer
}

// tableSeen is one table of a state as built: its metatable, its sizes (tableSizes) and
// every entry, each with, for a function, its environment and upvalues.
type tableSeen struct {
	t       *lua.LTable
	mt      lua.LValue
	sizes   [2]int
	entries []entrySeen
}

type entrySeen struct {
	key lua.LValue
	str string // the key, when it is a string (no value boxed to look it up)
	val lua.LValue
	fn  *lua.LFunction
	env *lua.LTable
	ups []lua.LValue
}

// tableFields are the indices, in gopher-lua's LTable, of its array part and of the list
// of every key its hash part was ever given (which only grows): tableSizes reads their
// lengths, so that a key added to a table is seen without walking the table. nil when
// this gopher-lua has no such fields; tableSizes then counts the entries.
var tableFields = func() []int {
	t := reflect.TypeFor[lua.LTable]()
	a, okA := t.FieldByName("array")
	k, okK := t.FieldByName("keys")
	if !okA || !okK || a.Type.Kind() != reflect.Slice || k.Type.Kind() != reflect.Slice {
		return nil
	}
	return []int{a.Index[0], k.Index[0]}
}()

// tableSizes is what grows when t is given a key it has not had: the lengths of its array
// part and of its list of keys (or, without tableFields, how many entries it has).
func tableSizes(t *lua.LTable) [2]int {
	if tableFields == nil {
		n := 0
		t.ForEach(func(lua.LValue, lua.LValue) { n++ })
		return [2]int{n, 0}
	}
	v := reflect.ValueOf(t).Elem()
	return [2]int{v.Field(tableFields[0]).Len(), v.Field(tableFields[1]).Len()}
}

// nestedConn is one connection of a script's commands to the server.
type nestedConn struct {
	buf bytes.Buffer
	w   *bufio.Writer
	r   *bufio.Reader
	// ctx is the server's context of the connection for the call under way (nil: a new one).
	ctx any
}

// notFromScripts are the commands miniredis refuses from a script (msgNotFromScripts).
var notFromScripts = map[string]bool{
	"AUTH": true, "SUBSCRIBE": true, "UNSUBSCRIBE": true, "PSUBSCRIBE": true, "PUNSUBSCRIBE": true,
	"MULTI": true, "EXEC": true, "WATCH": true, "EVAL": true, "EVAL_RO": true, "EVALSHA": true,
	"EVALSHA_RO": true, "SCRIPT": true,
}

// newLuaState compiles src (whose SHA1 is sha) for srv, as miniredis compiles it on its
// first EVAL: a syntax error is an error with the server's message.
func newLuaState(srv *server.Server, sha, src string) (*luaState, error) {
	chunk, err := parse.Parse(strings.NewReader(src), "<string>")
	if err != nil {
		return nil, miniError(inline(luaFailure(err)))
	}
	proto, err := lua.Compile(chunk, "")
	if err != nil {
		return nil, miniError(inline(luaFailure(err)))
	}
	s := &luaState{srv: srv, sha: sha, proto: proto}
	for _, c := range []*nestedConn{&s.nested, &s.pnested} {
		c.w = bufio.NewWriter(&c.buf)
		c.r = bufio.NewReader(&c.buf)
	}
	s.outPeer = server.NewPeer(bufio.NewWriter(&s.out))
	return s, nil
}

// luaFailure is miniredis's error reply for a script that failed to compile or to run.
// miniredis passes the message through fmt.Errorf as its format, so a % in it comes out
// as Errorf makes it (100% → 100%!(NOVERB)); errorf, a variable, does the same.
func luaFailure(err error) string {
	return errorf("ERR Error compiling script (new function): " + err.Error()).Error()
}

var errorf = fmt.Errorf

// inline is msg on one line, as the server writes an error reply: every space (a line
// break, a tab) a plain space.
func inline(msg string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		return r
	}, msg)
}

func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// guardGlobals is the guard miniredis puts on a script's globals, in its words: reading
// or creating a global the state does not have is an error.
const guardGlobals = `
local dbg=debug
local mt = {}
setmetatable(_G, mt)
mt.__newindex = function (t, n, v)
  if dbg.getinfo(2) then
    local w = dbg.getinfo(2, "S").what
    if w ~= "C" then
      error("Script attempted to create global variable '"..tostring(n).."'", 2)
    end
  end
  rawset(t, n, v)
end
mt.__index = function (t, n)
  if dbg.getinfo(2) and dbg.getinfo(2, "S").what ~= "C" then
    error("Script attempted to access nonexistent global variable '"..tostring(n).."'", 2)
  end
  return rawget(t, n)
end
debug = nil

`

// build makes the state miniredis makes for a call, and notes it as built.
func (s *luaState) build() error {
	if s.l != nil {
		s.l.Close()
	}
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	s.l = l
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.CoroutineLibName, lua.OpenCoroutine},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.DebugLibName, lua.OpenDebug},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return fmt.Errorf("opening Lua's %s library: %w", lib.name, err)
		}
	}
	luajson.Preload(l)
	if err := l.CallByParam(lua.P{Fn: l.GetGlobal("require"), NRet: 1, Protect: true}, lua.LString("json")); err != nil {
		return fmt.Errorf("loading cjson: %w", err)
	}
	l.SetGlobal("cjson", l.Get(-1))
	l.Pop(1)
	// KEYS and ARGV are replaced every call; these hold their places in the globals.
	l.SetGlobal("KEYS", l.NewTable())
	l.SetGlobal("ARGV", l.NewTable())
	mod := l.CreateTable(0, 16)
	for name, fn := range s.redisFuncs() {
		mod.RawSetString(name, l.NewFunction(fn))
	}
	for name, level := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3} {
		mod.RawSetString(name, lua.LNumber(level))
	}
	l.SetGlobal("redis", mod)
	l.SetGlobal("server", mod)
	l.RegisterModule("os", map[string]lua.LGFunction{
		// os.clock is miniredis's: a constant, no clock.
		"clock": func(l *lua.LState) int { l.Push(lua.LNumber(42)); return 1 },
	})
	// Compiled as miniredis compiles it, with no source name: its messages name none.
	chunk, err := parse.Parse(strings.NewReader(guardGlobals), "<string>")
	if err != nil {
		return fmt.Errorf("guarding the script's globals: %w", err)
	}
	guard, err := lua.Compile(chunk, "")
	if err != nil {
		return fmt.Errorf("guarding the script's globals: %w", err)
	}
	l.Push(l.NewFunctionFromProto(guard))
	if err := l.PCall(0, lua.MultRet, nil); err != nil {
		return fmt.Errorf("guarding the script's globals: %w", err)
	}
	l.SetTop(0)
	s.samples = []lua.LValue{lua.LNil, lua.LFalse, lua.LNumber(0), lua.LString(""),
		l.NewFunction(func(*lua.LState) int { return 0 }), l}
	s.mts = s.mts[:0]
	for _, v := range s.samples {
		s.mts = append(s.mts, l.GetMetatable(v))
	}
	s.built = s.look()
	s.fresh = true
	s.builds++
	return nil
}

// look notes every table reachable from the globals and the registry (the globals'
// KEYS and ARGV, which each call replaces, are left out as entries).
func (s *luaState) look() []tableSeen {
	var seen []tableSeen
	visited := map[*lua.LTable]bool{}
	var visit func(t *lua.LTable)
	visit = func(t *lua.LTable) {
		if visited[t] {
			return
		}
		visited[t] = true
		ts := tableSeen{t: t, mt: t.Metatable, sizes: tableSizes(t)}
		var next []*lua.LTable
		t.ForEach(func(k, v lua.LValue) {
			e := entrySeen{key: k, val: v}
			if str, ok := k.(lua.LString); ok {
				e.str = string(str)
				if t == s.l.G.Global && (e.str == "KEYS" || e.str == "ARGV") {
					return
				}
			}
			for _, x := range []lua.LValue{k, v} {
				switch x := x.(type) {
				case *lua.LTable:
					next = append(next, x)
				case *lua.LFunction:
					if x == v {
						e.fn, e.env = x, x.Env
					}
					for _, u := range x.Upvalues {
						if x == v {
							e.ups = append(e.ups, u.Value())
						}
						if ut, ok := u.Value().(*lua.LTable); ok {
							next = append(next, ut)
						}
					}
					if x.Env != nil {
						next = append(next, x.Env)
					}
				}
			}
			ts.entries = append(ts.entries, e)
		})
		if mt, ok := t.Metatable.(*lua.LTable); ok {
			next = append(next, mt)
		}
		seen = append(seen, ts)
		for _, n := range next {
			visit(n)
		}
	}
	visit(s.l.G.Global)
	visit(s.l.G.Registry)
	for _, mt := range s.mts {
		if mt, ok := mt.(*lua.LTable); ok {
			visit(mt)
		}
	}
	return seen
}

// unchanged reports whether the state is as built (but for KEYS and ARGV): no table was
// given a key, lost one, changed a value or its metatable; no function its environment
// or an upvalue; no basic type its metatable.
func (s *luaState) unchanged() bool {
	l := s.l
	if l.GetTop() != 0 || l.Env != l.G.Global {
		return false
	}
	for t, v := range s.samples {
		if l.GetMetatable(v) != s.mts[t] {
			return false
		}
	}
	for i := range s.built {
		ts := &s.built[i]
		if ts.t.Metatable != ts.mt || tableSizes(ts.t) != ts.sizes {
			return false
		}
		for j := range ts.entries {
			e := &ts.entries[j]
			var v lua.LValue
			if e.str != "" {
				v = ts.t.RawGetString(e.str)
			} else {
				v = ts.t.RawGet(e.key)
			}
			if v != e.val {
				return false
			}
			if e.fn == nil {
				continue
			}
			if e.fn.Env != e.env || len(e.fn.Upvalues) != len(e.ups) {
				return false
			}
			for k, u := range e.fn.Upvalues {
				if u.Value() != e.ups[k] {
					return false
				}
			}
		}
	}
	return true
}

// run calls the script with keys and argv and returns its reply as a client of the
// server reads it (miniCall's do): int64, string, []any, redis.Nil, or a miniError.
func (s *luaState) run(keys, argv []string) (any, error) {
	if !s.fresh {
		if err := s.build(); err != nil {
			return nil, err
		}
	}
	l := s.l
	kt, at := l.CreateTable(len(keys), 0), l.CreateTable(len(argv), 0)
	for i, k := range keys {
		kt.RawSetInt(i+1, lua.LString(k))
	}
	for i, a := range argv {
		at.RawSetInt(i+1, lua.LString(a))
	}
	l.G.Global.RawSetString("KEYS", kt)
	l.G.Global.RawSetString("ARGV", at)
	s.nested.ctx, s.pnested.ctx = nil, nil

	s.out.Reset()
	l.Push(l.NewFunctionFromProto(s.proto))
	if err := l.PCall(0, lua.MultRet, nil); err != nil {
		s.fresh = false
		s.outPeer.WriteError(luaFailure(err))
	} else {
		s.reply(l.Get(1))
		l.SetTop(0)
		s.fresh = s.unchanged()
	}
	s.outPeer.Flush()
	v, rest, err := readMiniReply(s.out.Bytes())
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("the script's reply has %d bytes past its end", len(rest))
	}
	return v, err
}

// reply writes the script's reply as miniredis writes it: a number as an integer (its
// fraction cut), true as 1, false and nil as a nil reply, a table with an err or ok field
// as an error or a status, any other table as the array of its elements up to the first
// nil.
func (s *luaState) reply(v lua.LValue) {
	c := s.outPeer
	switch t := v.(type) {
	case nil, *lua.LNilType:
		c.WriteNull()
	case lua.LBool:
		if t {
			c.WriteInt(1)
		} else {
			c.WriteNull()
		}
	case lua.LNumber:
		c.WriteInt(int(t))
	case lua.LString:
		c.WriteBulk(string(t))
	case *lua.LTable:
		if e := t.RawGetString("err"); e.Type() != lua.LTNil {
			c.WriteError(e.String())
			return
		}
		if ok := t.RawGetString("ok"); ok.Type() != lua.LTNil {
			c.WriteInline(ok.String())
			return
		}
		var elems []lua.LValue
		for j := 1; ; j++ {
			e := s.l.GetTable(t, lua.LNumber(j))
			if e.Type() == lua.LTNil {
				break
			}
			elems = append(elems, e)
		}
		c.WriteLen(len(elems))
		for _, e := range elems {
			s.reply(e)
		}
	default:
		// A function, a coroutine or userdata: miniredis panics on these; here the call
		// fails naming the Lua type.
		c.WriteError(fmt.Sprintf("ERR the script returned a Lua %s, which has no reply", v.Type()))
	}
}

// redisFuncs are the script's redis (and server) table: miniredis's functions.
func (s *luaState) redisFuncs() map[string]lua.LGFunction {
	wrongArgs := func(l *lua.LState, msg string) int {
		l.Error(lua.LString(msg), 1)
		return 0
	}
	return map[string]lua.LGFunction{
		"call":  func(l *lua.LState) int { return s.call(l, &s.nested, true) },
		"pcall": func(l *lua.LState) int { return s.call(l, &s.pnested, false) },
		"error_reply": func(l *lua.LState) int {
			msg, ok := l.Get(1).(lua.LString)
			if !ok {
				return wrongArgs(l, "wrong number or type of arguments")
			}
			code, rest, two := strings.Cut(string(msg), " ")
			code = strings.TrimPrefix(code, "-")
			final := "ERR " + code
			if two {
				final = code + " " + rest
			}
			res := l.CreateTable(0, 1)
			res.RawSetString("err", lua.LString(final))
			l.Push(res)
			return 1
		},
		"status_reply": func(l *lua.LState) int {
			msg, ok := l.Get(1).(lua.LString)
			if !ok {
				return wrongArgs(l, "wrong number or type of arguments")
			}
			l.Push(statusTable(l, string(msg)))
			return 1
		},
		"log": func(l *lua.LState) int {
			l.CheckInt(1)
			l.CheckString(2)
			return 0
		},
		"sha1hex": func(l *lua.LState) int {
			if l.GetTop() != 1 {
				return wrongArgs(l, "wrong number of arguments")
			}
			l.Push(lua.LString(sha1Hex(lua.LVAsString(l.Get(1)))))
			return 1
		},
		"replicate_commands": func(l *lua.LState) int {
			l.Push(lua.LTrue)
			return 1
		},
		"set_repl": func(l *lua.LState) int {
			if l.GetTop() != 1 {
				return wrongArgs(l, "wrong number of arguments")
			}
			return 1
		},
		// setresp changes nothing a script's reply or its commands' replies read on
		// miniredis either (each command of a script gets its own RESP2 connection); it
		// checks its argument as miniredis does.
		"setresp": func(l *lua.LState) int {
			if level := l.CheckInt(1); level != 2 && level != 3 {
				return wrongArgs(l, "RESP version must be 2 or 3")
			}
			return 0
		},
	}
}

func statusTable(l *lua.LState, msg string) *lua.LTable {
	t := l.CreateTable(0, 1)
	t.RawSetString("ok", lua.LString(msg))
	return t
}

// call is redis.call (failFast) or redis.pcall: the command goes to the server's Dispatch
// on c, and its reply comes back as miniredis gives it to a script — an integer as a
// number, a bulk string as a string, a nil as false, an array as a table, a status as
// {ok=…}; an error reply raises (call) or comes back as {err=…} (pcall).
func (s *luaState) call(l *lua.LState, c *nestedConn, failFast bool) int {
	top := l.GetTop()
	if top == 0 {
		l.Error(lua.LString(fmt.Sprintf("Please specify at least one argument for this redis lib call script: %s, &c.", s.sha)), 1)
		return 0
	}
	args := make([]string, top)
	for i := range args {
		switch a := l.Get(i + 1).(type) {
		case lua.LNumber:
			args[i] = a.String()
		case lua.LString:
			args[i] = string(a)
		default:
			l.Error(lua.LString(fmt.Sprintf("Lua redis lib command arguments must be strings or integers script: %s, &c.", s.sha)), 1)
			return 0
		}
	}
	c.buf.Reset()
	if notFromScripts[strings.ToUpper(args[0])] {
		fmt.Fprintf(&c.buf, "-%s\r\n", "This Redis command is not allowed from script script: "+s.sha+", &c")
	} else {
		// A peer of its own for each command, as miniredis gives each: what a command
		// leaves on its peer (QUIT closes it, HELLO switches its protocol) stays there;
		// the connection's context (the database SELECT chose) goes on to the next.
		c.w.Reset(&c.buf)
		peer := server.NewPeer(c.w)
		peer.Ctx = c.ctx
		s.srv.Dispatch(peer, args)
		c.w.Flush()
		c.ctx = peer.Ctx
	}
	c.r.Reset(&c.buf)
	res, err := server.ParseReply(c.r)
	if err != nil {
		msg := err.Error()
		unknown := strings.Contains(msg, "ERR unknown command")
		if failFast {
			if unknown {
				msg = fmt.Sprintf("Unknown Redis command called from script script: %s, &c.", s.sha)
			}
			l.Error(lua.LString(msg), 1)
			return 0
		}
		if unknown {
			msg = "ERR Unknown Redis command called from script"
		}
		t := l.CreateTable(0, 1)
		t.RawSetString("err", lua.LString(msg))
		l.Push(t)
		return 1
	}
	v, err := toLua(l, res)
	if err != nil {
		l.Error(lua.LString(err.Error()), 1)
		return 0
	}
	l.Push(v)
	return 1
}

// toLua is a command's reply (server.ParseReply's) as a script sees it.
func toLua(l *lua.LState, res any) (lua.LValue, error) {
	switch r := res.(type) {
	case nil:
		return lua.LFalse, nil
	case int:
		return lua.LNumber(r), nil
	case int64:
		return lua.LNumber(r), nil
	case string:
		return lua.LString(r), nil
	case []byte:
		return lua.LString(r), nil
	case server.Simple:
		return statusTable(l, string(r)), nil
	case error:
		return nil, r
	case []any:
		t := l.CreateTable(len(r), 0)
		for i, e := range r {
			if e == nil {
				t.RawSetInt(i+1, lua.LFalse)
				continue
			}
			if s, ok := e.(server.Simple); ok {
				// miniredis gives a status inside an array to the script as its text.
				t.RawSetInt(i+1, lua.LString(string(s)))
				continue
			}
			v, err := toLua(l, e)
			if err != nil {
				return nil, err
			}
			t.RawSetInt(i+1, v)
		}
		return t, nil
	}
	return nil, fmt.Errorf("a reply of the server the script cannot read (%T)", res)
}
