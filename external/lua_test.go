package external

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

func example(name string) string { return filepath.Join("..", "examples", "lua", name) }

// orderedRequests are mixedRequests in time order, on whole microseconds (ARGV[1]'s unit),
// none costlier than the burst.
func orderedRequests(n int, seed uint64, window time.Duration) []testRequest {
	reqs := mixedRequests(n, seed, window)
	last := int64(0)
	for i := range reqs {
		at := max(reqs[i].now, last) / 1000 * 1000
		reqs[i].now, last = at, at
		reqs[i].cost = min(reqs[i].cost, 3)
	}
	return reqs
}

// incrExpire is what examples/lua/incr_expire.lua decides, written out in Go: a counter
// per key created by its first request, living ⌈window⌉ whole seconds, counting every
// request, refused ones too, as 1.
type incrExpire struct {
	limit  int64
	ttl    int64
	count  map[uint32]int64
	expiry map[uint32]int64
}

func (m *incrExpire) Allow(key uint32, now, _ int64) algorithms.Decision {
	if exp, ok := m.expiry[key]; !ok || now >= exp {
		m.count[key] = 0
		m.expiry[key] = now + m.ttl
	}
	m.count[key]++
	return algorithms.Decision{Allowed: m.count[key] <= m.limit}
}

// TestLuaExamplesDecideAsTheirModels runs each script of examples/lua on the embedded
// miniredis, request for request beside the built-in (or, for incr_expire, the model)
// that decides as it does.
func TestLuaExamplesDecideAsTheirModels(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Second, Burst: 10}
	for _, c := range []struct {
		file, like string
	}{
		{"fixed_window.lua", "fixed-window"},
		{"notes_two_counter.lua", "notes-sliding-window"},
		{"notes_token_bucket.lua", "notes-token-bucket"},
		{"incr_expire.lua", ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			l, err := NewLua(example(c.file), "")
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(c.file, ".lua"); l.Name() != want {
				t.Errorf("name %q, want %q", l.Name(), want)
			}
			var model interface {
				Allow(key uint32, now, cost int64) algorithms.Decision
			}
			if c.like != "" {
				if model, err = algorithms.New(c.like, p); err != nil {
					t.Fatal(err)
				}
			} else {
				model = &incrExpire{limit: p.Limit, ttl: int64(time.Second), count: map[uint32]int64{}, expiry: map[uint32]int64{}}
			}
			lim, err := l.New(p)
			if err != nil {
				t.Fatal(err)
			}
			admitted, refused := 0, 0
			for i, r := range orderedRequests(800, 3, p.Window) {
				lim.(Limiter).SetName(r.key, "k"+strconv.Itoa(int(r.key)))
				got, want := lim.Allow(r.key, r.now, r.cost), model.Allow(r.key, r.now, r.cost)
				if got.Allowed != want.Allowed {
					t.Fatalf("request %d %+v: script %v, %s %v", i+1, r, got.Allowed, c.like, want.Allowed)
				}
				if got.Allowed {
					admitted++
				} else {
					refused++
				}
			}
			if err := lim.(Limiter).Close(); err != nil {
				t.Fatal(err)
			}
			if admitted < 50 || refused < 50 {
				t.Fatalf("%d admitted and %d refused: the requests test little", admitted, refused)
			}
		})
	}
}

// writeScript writes a script into a temporary folder and returns its path.
func writeScript(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLuaErrorsNameTheFileAndRequest: a script that fails, or returns a reply of the
// wrong shape, fails the run at the first request it did so, named with the file; every
// decision after it is a refusal.
func TestLuaErrorsNameTheFileAndRequest(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Second}
	// Each script answers the first two requests well and the third badly.
	const head = "local n = redis.call('INCR', KEYS[1]) if n < 3 then return 1 end\n"
	for _, c := range []struct{ name, body, want string }{
		{"raises", "return redis.error_reply('my limiter broke')", "the script failed: my limiter broke"},
		{"unknown", "return redis.call('NOSUCHCOMMAND')", "the script failed"},
		{"string", "return 'yes'", `the script returned the string "yes"`},
		{"nil", "return nil", "the script returned nil"},
		{"two", "return 2", "the script returned 2 as its decision"},
		{"element", "return {1, 'many'}", "element 2 of the script's reply is the string"},
		{"long", "return {1, 2, 3, 4}", "an array of 4 elements"},
		{"retry", "return {0, 0, -7}", "a retry-after of -7µs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeScript(t, c.name+".lua", head+c.body)
			l, err := NewLua(path, "")
			if err != nil {
				t.Fatal(err)
			}
			lim, err := l.New(p)
			if err != nil {
				t.Fatal(err)
			}
			x := lim.(Limiter)
			x.SetName(0, "alice")
			for i := range 4 {
				d := x.Allow(0, int64(i+1)*int64(time.Millisecond), 1)
				if i >= 2 && d.Allowed {
					t.Errorf("request %d admitted after the script failed", i+1)
				}
			}
			err = x.Close()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range []string{"lua script " + path, `request 3 (key "alice" at 1970-01-01T00:00:00.003Z, cost 1)`, c.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	t.Run("syntax", func(t *testing.T) {
		l, err := NewLua(writeScript(t, "broken.lua", "return (("), "")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Check(); err == nil || !strings.Contains(err.Error(), "cannot load the script") {
			t.Errorf("Check: %v, want the server's compile error", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := NewLua(filepath.Join(t.TempDir(), "nope.lua"), ""); err == nil || !strings.Contains(err.Error(), "nope.lua: no such file") {
			t.Errorf("NewLua: %v", err)
		}
	})
}

// TestLuaTimeIsWarned: a script that reads TIME gets a warning naming where — its line
// when the text shows it, its first request when only its behaviour does.
func TestLuaTimeIsWarned(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Second}
	run := func(src string) *Lua {
		l, err := NewLua(writeScript(t, "clock.lua", src), "")
		if err != nil {
			t.Fatal(err)
		}
		lim, err := l.New(p)
		if err != nil {
			t.Fatal(err)
		}
		lim.(Limiter).SetName(0, "alice")
		lim.Allow(0, 2*int64(time.Second), 1)
		lim.Allow(0, 3*int64(time.Second), 1)
		if err := lim.(Limiter).Close(); err != nil {
			t.Fatal(err)
		}
		return l
	}
	plain := run("-- redis.call('TIME') in a comment is no call\nlocal t = redis.call('TIME')\nreturn 1")
	if w := strings.Join(plain.Warnings(), "\n"); !strings.Contains(w, "clock.lua:2 reads TIME") {
		t.Errorf("warnings %q lack the line of the TIME call", w)
	}
	hidden := run("local c = 'TI' .. 'ME'\nif tonumber(ARGV[1]) > 2500000 then redis.call(c) end\nreturn 1")
	if w := strings.Join(hidden.Warnings(), "\n"); !strings.Contains(w, `clock.lua (first at request 2 (key "alice" at 1970-01-01T00:00:03Z, cost 1)) reads TIME`) {
		t.Errorf("warnings %q lack the first request that read TIME", w)
	}
	quiet := run("return 1")
	if w := quiet.Warnings(); len(w) != 0 {
		t.Errorf("a script without TIME is warned: %q", w)
	}
}

// TestLuaOnRealRedis: on a real server the script decides as on miniredis, its keys live
// under a prefix of the run's and are gone once the limiter is closed.
func TestLuaOnRealRedis(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL is not set")
	}
	p := algorithms.Policy{Limit: 10, Window: time.Second}
	l, err := NewLua(example("fixed_window.lua"), url)
	if err != nil {
		t.Fatal(err)
	}
	l.Batch = 16
	lim, err := l.New(p)
	if err != nil {
		t.Fatal(err)
	}
	x := lim.(*luaLimiter)
	builtin, _ := algorithms.New("fixed-window", p)
	reqs := orderedRequests(2000, 5, p.Window)
	for _, r := range reqs {
		x.SetName(r.key, "k"+strconv.Itoa(int(r.key)))
		x.Send(r.key, r.now, r.cost)
	}
	for i, r := range reqs {
		if got, want := x.Receive(), builtin.Allow(r.key, r.now, r.cost); got.Allowed != want.Allowed {
			t.Fatalf("request %d: script %v, built-in %v", i+1, got.Allowed, want.Allowed)
		}
	}
	r, err := store.NewRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if keys, err := r.Keys(x.prefix); err != nil || len(keys) == 0 {
		t.Fatalf("no keys under %q during the run (%v)", x.prefix, err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if keys, err := r.Keys(x.prefix); err != nil || len(keys) != 0 {
		t.Fatalf("%d keys left under %q (%v)", len(keys), x.prefix, err)
	}
	if w := strings.Join(l.Warnings(), "\n"); !strings.Contains(w, "fixed_window.lua:30 sets a TTL: a real server counts it on its wall clock") {
		t.Errorf("warnings %q lack the TTL's", w)
	}
}

// TestLuaConventionCheck: a script that reads KEYS or ARGV rlsim does not pass and then
// fails is told, before the run, what rlsim passes; the notes' two-counter script written
// for its own caller is the case; its adapter, and a script that reads a missing index but
// answers well, pass; a script that answers something other than a decision is named.
func TestLuaConventionCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		path string
		want []string // empty: the check passes
	}{
		{filepath.Join("testdata", "notes_two_counter_verbatim.lua"), []string{
			"notes_two_counter_verbatim.lua: it reads KEYS[2]; rlsim passes one key, KEYS[1]",
			"examples/lua/notes_two_counter.lua adapts", "arguments must be strings or integers"}},
		{filepath.Join("..", "examples", "lua", "notes_two_counter.lua"), nil},
		{filepath.Join("..", "examples", "lua", "fixed_window.lua"), nil},
		{write("extra_argv.lua", "local x = tonumber(ARGV[7]) + 1\nreturn 1"), []string{"it reads ARGV[7]"}},
		{write("tolerant.lua", "local k = KEYS[2] or KEYS[1]\nredis.call('INCR', k)\nreturn 1"), nil},
		{write("shape.lua", "return 'yes'"), []string{"shape.lua: a first request", "is answered with"}},
		{write("raises.lua", "return redis.error_reply('no state')"), nil}, // the run names the request it fails
		{write("shebang.lua", "#!lua flags=no-writes\nlocal x = tonumber(ARGV[6]) + 1\nreturn 1"), []string{"it reads ARGV[6]"}},
	} {
		l, err := NewLua(c.path, "")
		if err != nil {
			t.Fatal(err)
		}
		err = l.CheckConvention()
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.path, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: passed, want %q", c.path, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nlacks %q", c.path, err, w)
			}
		}
	}
}

// A script whose keys leave its KEYS[1]'s Redis Cluster slot is warned about, naming the
// key; one that derives its keys from KEYS[1], whose client key is its hash tag, is not.
// In a fleet that moves slots the same script is refused at its first such call.
func TestLuaCrossSlotIsWarnedAndRefusedInACluster(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Second}
	derived := "local n = redis.call('INCR', KEYS[1] .. ':prev')\nreturn 1"
	global := "redis.call('INCR', KEYS[1])\nredis.call('INCR', 'rl:all-users')\nreturn 1"
	run := func(src string) *Lua {
		l, err := NewLua(writeScript(t, "slots.lua", src), "")
		if err != nil {
			t.Fatal(err)
		}
		lim, err := l.New(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"alice", "bob", "carol"} {
			lim.(Limiter).SetName(uint32(i), name)
			lim.Allow(uint32(i), int64(i+1)*int64(time.Second), 1)
		}
		if err := lim.(Limiter).Close(); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if w := run(derived).Warnings(); len(w) != 0 {
		t.Errorf("a script deriving its keys from KEYS[1] is warned: %q", w)
	}
	w := strings.Join(run(global).Warnings(), "\n")
	for _, want := range []string{"slots.lua touches a key outside its KEYS[1]'s Redis Cluster hash slot", "INCR rl:all-users (slot", "CROSSSLOT"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}

	for _, refuse := range []bool{false, true} {
		l, err := NewLua(writeScript(t, "slots.lua", global), "")
		if err != nil {
			t.Fatal(err)
		}
		u, err := l.FleetStore(p, refuse)
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.Eval(nil, []string{store.TaggedKey("rl:", "alice") + ":tb"}, 1_000_000, 10, 1_000_000, 10, 1, 0, 0)
		u.Close()
		if refuse != (err != nil) || refuse && !strings.Contains(err.Error(), "CROSSSLOT") {
			t.Errorf("refuse %v: %v", refuse, err)
		}
		if got := strings.Join(l.Warnings(), "\n"); !refuse && !strings.Contains(got, "CROSSSLOT") {
			t.Errorf("a fleet store's cross-slot call is not warned about: %q", got)
		}
	}
}
