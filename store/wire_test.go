package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/internal/testnet"
)

// wireOf is a wire reading the replies in text.
func wireOf(text string) *wire {
	return &wire{rd: bufio.NewReaderSize(strings.NewReader(text), 64)}
}

// Every shape a server can answer with is read to its end, so the reply after it is read
// in step; an array of integers (or of their texts) is the reply's values, anything else
// an error reply naming what came.
func TestWireReadsEveryReplyShape(t *testing.T) {
	cases := []struct {
		reply string
		want  []int64
		err   string // a replyError holding this; "" none
	}{
		{"*4\r\n:1\r\n:99\r\n:0\r\n:-5\r\n", []int64{1, 99, 0, -5}, ""},
		{"*2\r\n$2\r\n10\r\n$20\r\n-9223372036854775808\r\n", []int64{10, -9223372036854775808}, ""},
		{"*0\r\n", []int64{}, ""},
		{"-NOSCRIPT No matching script. Please use EVAL.\r\n", nil, "NOSCRIPT No matching script"},
		{"-ERR user_script:12: attempt to compare nil with number\r\n", nil, "attempt to compare nil"},
		{"+OK\r\n", nil, `unexpected reply status "OK"`},
		{":7\r\n", nil, "unexpected reply integer 7"},
		{"$-1\r\n", nil, "unexpected reply nil"},
		{"*-1\r\n", nil, "unexpected reply nil"},
		{"$3\r\nabc\r\n", nil, "unexpected reply bulk string"},
		{"*3\r\n:1\r\n*2\r\n:2\r\n$1\r\nx\r\n:3\r\n", nil, "unexpected element array"},
		{"*2\r\n:1\r\n$-1\r\n", nil, "unexpected element nil"},
		{"*2\r\n$3\r\nabc\r\n:1\r\n", nil, `unexpected element "abc"`},
		{"*1\r\n$30\r\n123456789012345678901234567890\r\n", nil, "unexpected element of 30 bytes"},
		{"*2\r\n+OK\r\n-ERR inner\r\n", nil, "unexpected element status"},
	}
	const next = "*1\r\n:42\r\n"
	for _, c := range cases {
		w := wireOf(c.reply + next)
		got, err := w.ints(nil)
		var re replyError
		switch {
		case c.err == "" && (err != nil || !slices.Equal(got, c.want)):
			t.Errorf("%q: got %v, %v; want %v", c.reply, got, err, c.want)
		case c.err != "" && (!errors.As(err, &re) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: got %v; want an error reply with %q", c.reply, err, c.err)
		}
		if after, err := w.ints(nil); err != nil || !slices.Equal(after, []int64{42}) {
			t.Errorf("%q: the reply after it read %v, %v: out of step", c.reply, after, err)
		}
	}
}

// A reply cut short or not RESP at all is a failure of the connection, never a reply.
func TestWireRefusesBrokenReplies(t *testing.T) {
	for _, text := range []string{
		"", "*2\r\n:1\r\n", "*1\r\n$5\r\n12", ":1", "*1\n:1\r\n", "?what\r\n", "*x\r\n", "*-2\r\n",
		"*1\r\n:1x\r\n", "*1\r\n:99999999999999999999\r\n", "*1\r\n$x\r\n", "*1\r\n*1\r\n?\r\n",
		"*1\r\n" + ":" + strings.Repeat("1", 100) + "\r\n",
	} {
		_, err := wireOf(text).ints(nil)
		var re replyError
		if err == nil || errors.As(err, &re) {
			t.Errorf("%q: got %v, want a protocol or read error", text, err)
		}
	}
}

// parseInt reads what strconv.ParseInt reads, up to 19 digits, and nothing else.
func TestParseIntMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "-0", "+7", "42", "-1", "007", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "9999999999999999999", "", "-", "+", "1-", " 1", "1 ", "0x10", "1_0"} {
		checkParseInt(t, s)
	}
}

func checkParseInt(t *testing.T, s string) {
	got, ok := parseInt([]byte(s))
	want, err := strconv.ParseInt(s, 10, 64)
	digits := strings.TrimLeft(s, "+-")
	switch {
	case ok && (err != nil || got != want):
		t.Fatalf("parseInt(%q) = %d; strconv: %d, %v", s, got, want, err)
	case !ok && err == nil && len(digits) <= 19:
		t.Fatalf("parseInt(%q) refused what strconv reads as %d", s, want)
	}
}

func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-9223372036854775808", "9223372036854775807", "+1", "12a"} {
		f.Add(s)
	}
	f.Fuzz(checkParseInt)
}

// Whatever the bytes, reading replies ends in values or an error, without a panic, and
// an error reply leaves the wire at the start of the next reply.
func FuzzWireReplies(f *testing.F) {
	for _, s := range []string{"*4\r\n:1\r\n:99\r\n:0\r\n:-5\r\n", "-NOSCRIPT x\r\n", "*2\r\n*1\r\n:1\r\n$2\r\n12\r\n",
		"$-1\r\n", "*1\r\n$536870912\r\n", "*536870912\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		w := wireOf(text + "*1\r\n:42\r\n")
		for range 8 {
			_, err := w.ints(nil)
			if err == nil {
				continue
			}
			if !errors.As(err, new(replyError)) {
				return
			}
		}
	})
}

// fakeServer answers the RESP commands of every connection with answer, which sees the
// connection's number (from 1) and the command; it returns the reply text (thenClose at
// its end: the connection is closed after it), "hang" to say nothing more, or "close" to
// drop the connection. It records every command.
// thenClose, at the end of a fakeServer's reply, closes the connection once it is sent.
const thenClose = "\x00close"

type fakeServer struct {
	ln       net.Listener
	mu       sync.Mutex
	commands [][]string
	conns    atomic.Int64
	closed   atomic.Int64 // connections it has closed
}

func newFakeServer(t *testing.T, answer func(conn int, cmd []string) string) *fakeServer {
	ln := testnet.Listen(t)
	s := &fakeServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := int(s.conns.Add(1))
			go s.serve(c, n, answer)
		}
	}()
	return s
}

func (s *fakeServer) serve(c net.Conn, n int, answer func(int, []string) string) {
	defer s.closed.Add(1)
	defer c.Close()
	rd := bufio.NewReader(c)
	for {
		cmd, err := readRESPCommand(rd)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.commands = append(s.commands, cmd)
		s.mu.Unlock()
		switch reply := answer(n, cmd); reply {
		case "close":
			return
		case "hang":
			io.Copy(io.Discard, rd)
			return
		default:
			last, closing := strings.CutSuffix(reply, thenClose)
			if _, err := io.WriteString(c, last); err != nil || closing {
				return
			}
		}
	}
}

// readRESPCommand reads one command, an array of bulk strings, as a client sends it.
func readRESPCommand(rd *bufio.Reader) ([]string, error) {
	head, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("not a command: %q", head)
	}
	cmd := make([]string, n)
	for i := range cmd {
		size, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		m, err := strconv.Atoi(strings.TrimSpace(size[1:]))
		if err != nil {
			return nil, err
		}
		arg := make([]byte, m+2)
		if _, err := io.ReadFull(rd, arg); err != nil {
			return nil, err
		}
		cmd[i] = string(arg[:m])
	}
	return cmd, nil
}

func (s *fakeServer) recorded() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

// fakeFace is a face on a real server at url (a fakeServer) that has not been asked
// anything yet.
func fakeFace(t *testing.T, url string) *Redis {
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries = -1
	r := &Redis{client: redis.NewClient(opt), name: "redis", timeout: DefaultTimeout}
	t.Cleanup(func() { r.Close() })
	return r
}

// wireCalls is n two-counter calls for clients u0, u1, … at instants 1 ms apart, with the
// store clock of each as a pipeline would send it.
func wireCalls(t *testing.T, r *Redis, n int) ([]Call, []int64, []int) {
	lim, err := NewLimiter(r, "sliding-window", algorithms.Policy{Limit: 100, Window: time.Minute}, "rl:")
	if err != nil {
		t.Fatal(err)
	}
	lim.SetClock(StoreClock)
	var calls []Call
	var clocks []int64
	var lane []int
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	for i := range n {
		at := start + int64(i)*int64(time.Millisecond)
		calls = append(calls, lim.Call(fmt.Sprint("u", i), At{Node: at, Store: at}, 1))
		clocks = append(clocks, at)
		lane = append(lane, i)
	}
	return calls, clocks, lane
}

// reply4 is a two-counter script's reply.
func reply4(allowed, remaining int) string {
	return fmt.Sprintf("*4\r\n:%d\r\n:%d\r\n:0\r\n:60000000\r\n", allowed, remaining)
}

// A wire logs in and selects the database of the face's URL, and sends each call as the
// client would: the script's SHA, its keys, and the arguments argv gives (a real server
// is sent the store's clock in µs and keep grown by WallMargin).
func TestWireSpeaksAsTheClient(t *testing.T) {
	for _, c := range []struct {
		user string
		db   int
		want [][]string
	}{
		{"ann:secret@", 3, [][]string{{"AUTH", "ann", "secret"}, {"SELECT", "3"}}},
		{":secret@", 0, [][]string{{"AUTH", "secret"}}},
		{"", 0, nil},
	} {
		s := newFakeServer(t, func(_ int, cmd []string) string {
			if cmd[0] == "EVALSHA" {
				return reply4(1, 7)
			}
			return "+OK\r\n"
		})
		r := fakeFace(t, fmt.Sprintf("redis://%s%s/%d", c.user, s.ln.Addr(), c.db))
		calls, clocks, lane := wireCalls(t, r, 3)
		out := make([][]int64, len(calls))
		if n, err := r.wirePipeline(calls, clocks, lane, out); n != 3 || err != nil {
			t.Fatalf("%+v: %d calls, %v", c, n, err)
		}
		for i, v := range out {
			if !slices.Equal(v, []int64{1, 7, 0, 60000000}) {
				t.Fatalf("reply %d: %v", i, v)
			}
		}
		got := s.recorded()
		if len(got) != len(c.want)+3 || !slices.EqualFunc(got[:len(c.want)], c.want, slices.Equal) {
			t.Fatalf("%+v: the server got %q", c, got)
		}
		for i, cmd := range got[len(c.want):] {
			want := []string{"EVALSHA", calls[i].Script.lua.Hash(), "2"}
			want = append(want, calls[i].Keys...)
			for _, a := range r.argv(calls[i].Args, clocks[i]) {
				want = append(want, a.(string))
			}
			if !slices.Equal(cmd, want) {
				t.Fatalf("call %d sent as %q, the client sends %q", i, cmd, want)
			}
		}
	}
}

// A server that refuses the password is named as the error, not taken for a lost server.
func TestWireLoginRefused(t *testing.T) {
	s := newFakeServer(t, func(int, []string) string { return "-WRONGPASS invalid username-password pair\r\n" })
	r := fakeFace(t, "redis://ann:nope@"+s.ln.Addr().String())
	calls, clocks, lane := wireCalls(t, r, 2)
	_, err := r.wirePipeline(calls, clocks, lane, make([][]int64, 2))
	if err == nil || !strings.Contains(err.Error(), "AUTH: WRONGPASS") || errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
}

// An error reply fails its call and keeps the wire (the next pipeline goes on the same
// connection, read in step); a NOSCRIPT with only NOSCRIPTs after it is the calls to send
// again, one with a call that ran after it is out of order. A wire the server closed while
// it was idle is left for a new one.
func TestWireErrorRepliesKeepTheConnection(t *testing.T) {
	var mu sync.Mutex
	var script []string // the replies to give, in turn, over the whole test
	next := 0
	s := newFakeServer(t, func(int, []string) string {
		mu.Lock()
		defer mu.Unlock()
		next++
		return script[next-1]
	})
	r := fakeFace(t, "redis://"+s.ln.Addr().String())
	calls, clocks, lane := wireCalls(t, r, 3)
	noScript := "-NOSCRIPT No matching script. Please use EVAL.\r\n"
	for _, c := range []struct {
		replies []string
		n       int
		err     string
	}{
		{[]string{reply4(1, 1), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", reply4(1, 2)}, 1, "script sliding_window: WRONGTYPE"},
		{[]string{reply4(1, 3), noScript, noScript}, 1, "NOSCRIPT"},
		{[]string{noScript, reply4(1, 4), noScript}, 0, "out of order"},
		{[]string{reply4(1, 5), reply4(1, 6), reply4(1, 7)}, 3, ""},
	} {
		mu.Lock()
		script = append(script, c.replies...)
		mu.Unlock()
		out := make([][]int64, 3)
		n, err := r.wirePipeline(calls, clocks, lane, out)
		if n != c.n || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Fatalf("%q: %d calls, %v; want %d, %q", c.replies, n, err, c.n, c.err)
		}
		if c.err == "NOSCRIPT" && !errors.Is(err, errNoScript) {
			t.Fatalf("%v is not errNoScript", err)
		}
		for i := range n {
			if out[i] == nil {
				t.Fatalf("%q: call %d has no reply", c.replies, i)
			}
		}
	}
	if got := s.conns.Load(); got != 1 {
		t.Fatalf("%d connections: a wire was dropped after an error reply", got)
	}
	if got := r.calls.Load(); got != 1+1+0+3 {
		t.Fatalf("%d calls counted, want 5", got)
	}
	// A wire the server closed while it was idle is not used: the next pipeline dials anew.
	mu.Lock()
	script = append(script, reply4(1, 8), reply4(1, 9), reply4(1, 10)+thenClose, reply4(1, 11), reply4(1, 12), reply4(1, 13))
	mu.Unlock()
	if n, err := r.wirePipeline(calls, clocks, lane, make([][]int64, 3)); n != 3 || err != nil {
		t.Fatalf("before the server closed the wire: %d calls, %v", n, err)
	}
	for start := time.Now(); s.closed.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > DefaultTimeout {
			t.Fatal("the server did not close the connection")
		}
	}
	if n, err := r.wirePipeline(calls, clocks, lane, make([][]int64, 3)); n != 3 || err != nil {
		t.Fatalf("after the server closed the idle wire: %d calls, %v", n, err)
	}
	if got := s.conns.Load(); got != 2 || len(r.wires.free) != 1 {
		t.Fatalf("%d connections, %d idle wires, want a second connection", got, len(r.wires.free))
	}
}

// A server that drops the connection in the middle of a pipeline makes ErrUnavailable,
// and the next pipeline dials again; one that stops answering makes ErrTimeout within
// Timeout.
func TestWireLostAndStalled(t *testing.T) {
	var replies atomic.Int64
	s := newFakeServer(t, func(conn int, _ []string) string {
		if conn == 1 && replies.Add(1) == 2 {
			return "close"
		}
		return reply4(1, 1)
	})
	r := fakeFace(t, "redis://"+s.ln.Addr().String())
	calls, clocks, lane := wireCalls(t, r, 3)
	if _, err := r.wirePipeline(calls, clocks, lane, make([][]int64, 3)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("connection dropped: got %v, want ErrUnavailable", err)
	}
	if n, err := r.wirePipeline(calls, clocks, lane, make([][]int64, 3)); n != 3 || err != nil {
		t.Fatalf("after a dropped connection: %d calls, %v", n, err)
	}
	if got := s.conns.Load(); got != 2 {
		t.Fatalf("%d connections, want a second one after the first was dropped", got)
	}

	stalled := newFakeServer(t, func(int, []string) string { return "hang" })
	r = fakeFace(t, "redis://"+stalled.ln.Addr().String())
	start := time.Now()
	_, err := r.wirePipeline(calls, clocks, lane, make([][]int64, 3))
	if !errors.Is(err, ErrTimeout) || time.Since(start) > 2*DefaultTimeout {
		t.Fatalf("stalled server: %v after %s", err, time.Since(start))
	}
}

// On a real server the lanes' wires use the database of the URL, as the face's client
// does: what a streamed batch writes is found there and not in the database of
// RLSIM_REDIS_URL.
func TestWireSelectsTheDatabaseOnRealRedis(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set: no real Redis to run against")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	db := 7
	if opt.DB == db {
		db = 8
	}
	base := url[:strings.LastIndex(url, "/")]
	if strings.Count(url, "/") < 3 { // redis://host:port without a database
		base = url
	}
	r, err := NewRedis(fmt.Sprintf("%s/%d", base, db))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	prefix := testPrefix(t, 1)
	lim, err := NewLimiter(r, "fixed-window", algorithms.Policy{Limit: 10, Window: time.Minute}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var calls []Call
	for i := range 64 {
		calls = append(calls, lim.Call(fmt.Sprint("u", i), Now(1.7e18), 1))
	}
	if _, err := NewStream(r).Send(calls).Wait(); err != nil {
		t.Fatal(err)
	}
	defer deleteUnder(t, r, prefix)
	ctx := context.Background()
	if n, err := r.Client().Exists(ctx, calls[0].Keys...).Result(); n != 1 || err != nil {
		t.Fatalf("database %d holds %d of the call's keys (%v)", db, n, err)
	}
	zero := redis.NewClient(&redis.Options{Addr: opt.Addr, Username: opt.Username, Password: opt.Password, DB: opt.DB})
	defer zero.Close()
	if n, _ := zero.Exists(ctx, calls[0].Keys...).Result(); n != 0 {
		t.Fatalf("database %d also holds the call's keys", opt.DB)
	}
}
