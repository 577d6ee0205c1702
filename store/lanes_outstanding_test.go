package store

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/internal/testnet"
)

// countingServer is a RESP server for the order of a stream's calls: EVALSHA of a script
// it holds adds one to a counter of its first key and answers the count, so a client's
// replies are 1, 2, 3, … exactly when its calls ran in the order they were made. SCRIPT
// LOAD loads a script (it starts with the embedded ones); at the loseAt-th EVALSHA it has been sent (counting from 1) it
// loses every script, as SCRIPT FLUSH does, and answers NOSCRIPT until one is loaded.
//
// It holds every reply to EVALSHA until it has been sent hold of them in all, on every
// connection together, and then sends what it holds: a stream whose lanes write their
// next pipelines before the replies of the last ones are back gets there; one that waits
// for the replies first gets there only through idle, after which it sends what it holds
// all the same (heldOut then says so). delay, when set, is how long it waits before it
// runs the first call of each pipeline of perPipe calls on a connection.
type countingServer struct {
	ln      net.Listener
	loseAt  int
	hold    int
	perPipe int
	delay   time.Duration
	stall   bool // answers no EVALSHA at all
	// afterLoad is how long it waits before it runs the first EVALSHA it is sent after a
	// script is loaded: a call sent again then would be overtaken by any sent at once.
	afterLoad time.Duration

	mu       sync.Mutex
	scripts  map[string]bool
	counts   map[string]int
	evals    int
	noScript int  // NOSCRIPT replies sent
	loaded   bool // a script has been loaded and no EVALSHA has come since
	heldOut  bool
	allIn    chan struct{} // closed once hold EVALSHA have come
}

// idle is how long a connection of a countingServer holds its replies with nothing more
// coming before it sends them anyway.
const idle = time.Second

func newCountingServer(t *testing.T, loseAt, hold int) *countingServer {
	s := &countingServer{ln: testnet.Listen(t), loseAt: loseAt, hold: hold, scripts: map[string]bool{},
		counts: map[string]int{}, allIn: make(chan struct{})}
	if hold == 0 {
		close(s.allIn)
	}
	for _, sc := range Scripts() {
		s.scripts[sc.lua.Hash()] = true // loaded before the stream starts
	}
	go func() {
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *countingServer) serve(c net.Conn) {
	defer c.Close()
	cmds := make(chan []string, 1024)
	go func() {
		defer close(cmds)
		rd := bufio.NewReader(c)
		for {
			cmd, err := readRESPCommand(rd)
			if err != nil {
				return
			}
			cmds <- cmd
		}
	}()
	var held strings.Builder
	evals := 0 // on this connection
	for {
		var cmd []string
		var ok bool
		var allIn chan struct{} // nil (never ready) while nothing is held
		if held.Len() > 0 {
			allIn = s.allIn
		}
		select {
		case cmd, ok = <-cmds:
		case <-allIn:
			c.Write([]byte(held.String()))
			held.Reset()
			continue
		case <-time.After(idle):
			s.mu.Lock()
			s.heldOut = s.heldOut || held.Len() > 0
			s.mu.Unlock()
			c.Write([]byte(held.String()))
			held.Reset()
			continue
		}
		if !ok {
			return
		}
		if cmd[0] == "EVALSHA" {
			if s.stall {
				continue
			}
			if s.delay > 0 && evals%s.perPipe == 0 {
				time.Sleep(s.delay)
			}
			s.mu.Lock()
			first := s.loaded
			s.loaded = false
			s.mu.Unlock()
			if first {
				time.Sleep(s.afterLoad)
			}
			evals++
		}
		held.WriteString(s.answer(cmd))
		select {
		case <-s.allIn:
			c.Write([]byte(held.String()))
			held.Reset()
		default:
		}
	}
}

// answer runs cmd and returns its reply.
func (s *countingServer) answer(cmd []string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch strings.ToUpper(cmd[0]) {
	case "EVALSHA":
		if s.evals++; s.evals == s.loseAt {
			clear(s.scripts)
		}
		if s.evals == s.hold {
			close(s.allIn)
		}
		if !s.scripts[cmd[1]] {
			s.noScript++
			return "-NOSCRIPT No matching script. Please use EVAL.\r\n"
		}
		s.counts[cmd[3]]++
		return fmt.Sprintf("*1\r\n:%d\r\n", s.counts[cmd[3]])
	case "SCRIPT":
		if len(cmd) == 3 && strings.EqualFold(cmd[1], "LOAD") {
			sum := sha1.Sum([]byte(cmd[2]))
			sha := hex.EncodeToString(sum[:])
			s.scripts[sha] = true
			s.loaded = true
			return "$" + strconv.Itoa(len(sha)) + "\r\n" + sha + "\r\n"
		}
	}
	return "-ERR unknown command '" + cmd[0] + "'\r\n"
}

// countingFace is a face on s with lanes lanes and the round-trip deadline timeout.
func countingFace(t *testing.T, s *countingServer, lanes int, timeout time.Duration) *Redis {
	r := &Redis{client: redis.NewClient(&redis.Options{Addr: s.ln.Addr().String(), MaxRetries: -1, DisableIdentity: true,
		ReadTimeout: timeout, WriteTimeout: timeout}), name: "redis", timeout: timeout}
	r.SetLanes(lanes)
	t.Cleanup(func() { r.Close() })
	return r
}

// countedBatches is batches batches of size calls each, call g of them (across batches)
// for client c<g mod clients>, its first key named after the client.
func countedBatches(t *testing.T, r *Redis, batches, size, clients int) [][]Call {
	lim, err := NewLimiter(r, "fixed-window", algorithms.Policy{Limit: 100, Window: time.Minute}, "rl:")
	if err != nil {
		t.Fatal(err)
	}
	r.loaded = map[*Script]bool{lim.script: true} // as if loaded before: the stream sends it at once
	now := int64(1.7e18)
	out := make([][]Call, batches)
	for b := range out {
		for i := range size {
			g := b*size + i
			out[b] = append(out[b], lim.Call(fmt.Sprint("c", g%clients), Now(now+int64(g)), 1))
		}
	}
	return out
}

// sendAll sends the batches on a new stream, each once fewer than depth are on their way
// (0: every batch before it waits for any), and returns the replies of each (nil and the
// error for one that failed).
func sendAll(r *Redis, batches [][]Call, depth int) ([][][]int64, []error) {
	s := NewStream(r)
	pending := make([]*Pending, len(batches))
	replies, errs := make([][][]int64, len(batches)), make([]error, len(batches))
	waited := 0
	wait := func() {
		replies[waited], errs[waited] = pending[waited].Wait()
		waited++
	}
	for b, calls := range batches {
		pending[b] = s.Send(calls)
		if depth > 0 && b+1-waited > depth {
			wait()
		}
	}
	for waited < len(batches) {
		wait()
	}
	return replies, errs
}

// A server that loses its scripts in the middle of a pipeline while the lanes' next
// pipelines are written behind it answers NOSCRIPT to them all; each is sent again, after
// the scripts are loaded, in the order the calls were made, so every client's calls run
// in turn: its replies count 1, 2, 3, …. The server holds its replies until every batch
// has come, which only a stream that writes a lane's next pipeline before the last one's
// replies are back lets it do.
func TestStreamNoScriptBehindOutstandingPipelines(t *testing.T) {
	for _, c := range []struct{ lanes, size, clients, loseAt, batches, depth int }{
		{1, 20, 5, 30, 4, 0},             // lost in the middle of the second of four pipelines
		{1, 20, 5, 21, 4, 0},             // at the first call of the second
		{DefaultLanes, 64, 16, 90, 4, 0}, // on four lanes, in the middle of the second batch
		// Four batches on their way, then one more each time the oldest is back: the
		// batches after the loss come while the lane is lost, and wait for it.
		{1, 20, 5, 30, 12, 3},
		{DefaultLanes, 64, 16, 90, 12, 3},
	} {
		batches := c.batches
		s := newCountingServer(t, c.loseAt, 4*c.size)
		s.afterLoad = 50 * time.Millisecond
		r := countingFace(t, s, c.lanes, DefaultTimeout)
		replies, errs := sendAll(r, countedBatches(t, r, batches, c.size, c.clients), c.depth)
		for b := range batches {
			if errs[b] != nil {
				t.Fatalf("%+v: batch %d: %v", c, b, errs[b])
			}
			for i, v := range replies[b] {
				g := b*c.size + i
				if want := int64(g/c.clients + 1); len(v) != 1 || v[0] != want {
					t.Fatalf("%+v: call %d (client c%d): reply %v, want [%d]: the client's calls ran out of order", c, g, g%c.clients, v, want)
				}
			}
		}
		s.mu.Lock()
		heldOut, noScript := s.heldOut, s.noScript
		s.mu.Unlock()
		if heldOut {
			t.Fatalf("%+v: the server waited %s for the next pipelines: no lane wrote one before the replies of its last", c, idle)
		}
		// Every call from the one at loseAt on to the last of the fourth batch met
		// NOSCRIPT, those written behind it too (and, with depth, those written before
		// the lane knew it was lost).
		if want := 4*c.size - c.loseAt + 1; noScript < want || c.depth == 0 && noScript != want || r.reloads.Load() == 0 {
			t.Fatalf("%+v: %d NOSCRIPT replies (want %d), %d reloads", c, noScript, want, r.reloads.Load())
		}
	}
}

// The face's timeout bounds each pipeline from the moment the replies before it on its
// connection are read, not from when it was written: a server that takes most of the
// timeout over every pipeline, with several written on one connection at once, is slow,
// not dead. One that answers nothing fails the first pipeline on its way with ErrTimeout
// and the others behind it with errStopped at once, each not waiting a timeout of its own.
func TestStreamTimeoutWithSeveralOutstanding(t *testing.T) {
	const batches, size, timeout = 5, 20, 400 * time.Millisecond
	slow := newCountingServer(t, 0, 0)
	slow.perPipe, slow.delay = size, timeout/2 // the last pipeline's replies come 2.5 timeouts after it was written
	r := countingFace(t, slow, 1, timeout)
	if _, errs := sendAll(r, countedBatches(t, r, batches, size, 5), 0); errors.Join(errs...) != nil {
		t.Fatalf("a slow server with %d pipelines on one connection: %v", batches, errors.Join(errs...))
	}

	stalled := newCountingServer(t, 0, 0)
	stalled.stall = true
	r = countingFace(t, stalled, 1, timeout)
	_, errs := sendAll(r, countedBatches(t, r, batches, size, 5), 0)
	if !errors.Is(errs[0], ErrTimeout) {
		t.Fatalf("a stalled server: the first batch: want ErrTimeout, got %v", errs[0])
	}
	for b, err := range errs[1:] {
		if !errors.Is(err, errStopped) {
			t.Fatalf("a stalled server: batch %d behind the first: want %v, got %v", b+1, errStopped, err)
		}
	}
}
