package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A wire is one connection of a face's lanes to a real server, spoken in RESP2 directly:
// a lane's pipeline of EVALSHA is written straight into one buffer from the calls'
// integers, and the replies, arrays of integers, are read straight into one slab of
// int64. Going through the general client instead cost about five times the CPU per
// decision on the client's side, which on a machine with no idle core is taken from the
// server (docs/performance.md, "Redis pipelining").
//
// A wire is used by one pipeline at a time (getWire and putWire); one that failed in any
// way but an error reply is closed and forgotten, and the next pipeline dials a new one.
// Its I/O is bounded as the client's is, by the face's context (bound).
type wire struct {
	conn net.Conn
	rd   *bufio.Reader
	buf  []byte // the commands of the pipeline being written
}

// wires is the face's idle lane connections.
type wires struct {
	mu   sync.Mutex
	free []*wire
	shut bool // the face is closed: a wire put back is closed
}

// getWire returns an idle wire of the face, or dials one. An idle wire the server has
// closed meanwhile (its idle timeout, a restart) is closed too rather than used: a
// pipeline that found out by writing on it could not tell which calls had run.
func (r *Redis) getWire() (*wire, error) {
	r.wires.mu.Lock()
	for n := len(r.wires.free); n > 0; n-- {
		w := r.wires.free[n-1]
		r.wires.free = r.wires.free[:n-1]
		if w.rd.Buffered() == 0 && open(w.conn) {
			r.wires.mu.Unlock()
			return w, nil
		}
		w.conn.Close()
	}
	r.wires.mu.Unlock()
	return r.dialWire()
}

// putWire gives back a wire whose last pipeline was read to its end.
func (r *Redis) putWire(w *wire) {
	r.wires.mu.Lock()
	defer r.wires.mu.Unlock()
	if r.wires.shut {
		w.conn.Close()
		return
	}
	r.wires.free = append(r.wires.free, w)
}

// closeWires closes the idle wires, and every wire put back from now on.
func (r *Redis) closeWires() {
	r.wires.mu.Lock()
	defer r.wires.mu.Unlock()
	r.wires.shut = true
	for _, w := range r.wires.free {
		w.conn.Close()
	}
	r.wires.free = nil
}

// dialWire connects to the face's server as its client does (the same address, TLS and
// credentials) and selects the same database.
func (r *Redis) dialWire() (*wire, error) {
	opt := r.client.Options()
	ctx, cancel := r.ctx()
	defer cancel()
	conn, err := opt.Dialer(ctx, opt.Network, opt.Addr)
	if err == nil {
		w := &wire{conn: conn, rd: bufio.NewReaderSize(conn, 32<<10)}
		if err = w.login(ctx, opt); err == nil {
			return w, nil
		}
		conn.Close()
	}
	return nil, r.wrap(fmt.Errorf("redis at %s: %w", opt.Addr, err))
}

// login sends the AUTH and SELECT the options ask for, within ctx.
func (w *wire) login(ctx context.Context, opt *redis.Options) error {
	var cmds [][]string
	switch {
	case opt.Username != "":
		cmds = append(cmds, []string{"AUTH", opt.Username, opt.Password})
	case opt.Password != "":
		cmds = append(cmds, []string{"AUTH", opt.Password})
	}
	if opt.DB != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(opt.DB)})
	}
	if len(cmds) == 0 {
		return nil
	}
	release := w.bound(ctx)
	for _, cmd := range cmds {
		w.buf = appendCommand(w.buf, cmd)
	}
	err := w.flush()
	for _, cmd := range cmds {
		if err != nil {
			break
		}
		var line []byte
		if line, err = w.line(); err == nil && line[0] != '+' {
			err = fmt.Errorf("%s: %s", cmd[0], strings.TrimPrefix(string(line), "-"))
		}
	}
	if !release() && err == nil {
		err = ctx.Err() // answered, but the wire's deadline is past now
	}
	return err
}

// bound ends the wire's I/O when ctx is done: its deadline moves into the past, so a read
// or write on its way fails with a timeout. release stops that, and reports false when it
// came too late (the wire's deadline is past: it must not be used again).
func (w *wire) bound(ctx context.Context) (release func() bool) {
	return context.AfterFunc(ctx, func() { w.conn.SetDeadline(expired) })
}

// boundHalf is bound for one direction of a wire whose reads and writes belong to
// different pipelines (a stream's lane, see Stream): when ctx is done, set (the
// connection's SetReadDeadline or SetWriteDeadline) moves that direction's deadline into
// the past, so the I/O on its way fails with a timeout and the other direction goes on.
// release stops that; if it came too late, it waits for the deadline to have moved and
// clears it again, so the next pipeline's I/O in that direction starts afresh: the I/O it
// bounded was done by then.
func boundHalf(ctx context.Context, set func(time.Time) error) (release func()) {
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		set(expired)
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired
			set(time.Time{})
		}
	}
}

// expired is a deadline long past.
var expired = time.Unix(1, 0)

// flush writes the buffered commands.
func (w *wire) flush() error {
	_, err := w.conn.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// appendCommand appends a command of string arguments in RESP.
func appendCommand(b []byte, args []string) []byte {
	b = appendHeader(b, '*', int64(len(args)))
	for _, a := range args {
		b = appendBulk(b, a)
	}
	return b
}

// appendEvalSha appends EVALSHA sha with keys and the integer arguments args, each
// integer as the bulk string of its decimal text, as a client sends it.
func appendEvalSha(b []byte, sha string, keys []string, args []int64) []byte {
	b = appendHeader(b, '*', int64(3+len(keys)+len(args)))
	b = append(b, "$7\r\nEVALSHA\r\n"...)
	b = appendBulk(b, sha)
	var text [20]byte
	b = appendBulk(b, strconv.AppendInt(text[:0], int64(len(keys)), 10))
	for _, k := range keys {
		b = appendBulk(b, k)
	}
	for _, a := range args {
		b = appendBulk(b, strconv.AppendInt(text[:0], a, 10))
	}
	return b
}

// appendHeader appends a RESP line of a type byte and a count.
func appendHeader(b []byte, kind byte, n int64) []byte {
	b = append(b, kind)
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// appendBulk appends s as a bulk string.
func appendBulk[T string | []byte](b []byte, s T) []byte {
	b = appendHeader(b, '$', int64(len(s)))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// errProtocol marks a reply the wire could not read as RESP2: the connection is out of
// step and must go.
var errProtocol = errors.New("redis protocol")

// line reads one line of a reply, without its CRLF. It is valid until the next read.
func (w *wire) line() ([]byte, error) {
	line, err := w.rd.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: a line longer than %d bytes", errProtocol, w.rd.Size())
		}
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: malformed line %q", errProtocol, line)
	}
	return line[:len(line)-2], nil
}

// A replyError is a reply the server gave as an error, or one that is not an array of
// integers: the call failed, the connection is still in step.
type replyError string

func (e replyError) Error() string { return string(e) }

// ints reads one reply, an array of integers (or of their decimal texts), and appends it
// to into. A reply of another shape is read to its end and returned as a replyError;
// any other error means the connection is lost or out of step.
func (w *wire) ints(into []int64) ([]int64, error) {
	line, err := w.line()
	if err != nil {
		return into, err
	}
	switch line[0] {
	case '-':
		return into, replyError(line[1:])
	case '*':
	default:
		shape := describeReply(line)
		if err := w.skip(line); err != nil {
			return into, err
		}
		return into, replyError("unexpected reply " + shape + ", want an array of integers")
	}
	n, err := parseCount(line)
	if err != nil {
		return into, err
	}
	if n < 0 {
		return into, replyError("unexpected reply nil, want an array of integers")
	}
	var odd error
	for range n {
		line, err := w.line()
		if err != nil {
			return into, err
		}
		if line[0] == ':' || line[0] == '$' {
			v, err := w.int(line)
			switch {
			case err == nil:
				into = append(into, v)
				continue
			case !errors.As(err, new(replyError)):
				return into, err
			case odd == nil:
				odd = err
			}
			continue
		}
		if odd == nil {
			odd = replyError("unexpected element " + describeReply(line) + " in the reply, want integers")
		}
		if err := w.skip(line); err != nil {
			return into, err
		}
	}
	return into, odd
}

// int reads an integer element whose line is line: an integer, or a bulk string holding
// one.
func (w *wire) int(line []byte) (int64, error) {
	if line[0] == ':' {
		v, ok := parseInt(line[1:])
		if !ok {
			return 0, fmt.Errorf("%w: integer %q", errProtocol, line)
		}
		return v, nil
	}
	n, err := parseCount(line)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, replyError("unexpected element nil in the reply, want integers")
	}
	if n > 20 { // longer than any int64's text
		if _, err := w.rd.Discard(n + 2); err != nil {
			return 0, err
		}
		return 0, replyError(fmt.Sprintf("unexpected element of %d bytes in the reply, want integers", n))
	}
	var buf [22]byte
	text := buf[:n+2]
	if _, err := io.ReadFull(w.rd, text); err != nil {
		return 0, err
	}
	v, ok := parseInt(text[:n])
	if !ok {
		return 0, replyError(fmt.Sprintf("unexpected element %q in the reply, want integers", text[:n]))
	}
	return v, nil
}

// skip reads the rest of a reply whose first line is line.
func (w *wire) skip(line []byte) error {
	switch line[0] {
	case '+', '-', ':':
		return nil
	case '$':
		n, err := parseCount(line)
		if err != nil || n < 0 {
			return err
		}
		_, err = w.rd.Discard(n + 2)
		return err
	case '*':
		n, err := parseCount(line)
		if err != nil {
			return err
		}
		for range n {
			line, err := w.line()
			if err != nil {
				return err
			}
			if err := w.skip(line); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown reply type %q", errProtocol, line[0])
}

// parseCount reads the count of an array or bulk string line (-1: nil).
func parseCount(line []byte) (int, error) {
	n, ok := parseInt(line[1:])
	if !ok || n < -1 || n > 512<<20 {
		return 0, fmt.Errorf("%w: count %q", errProtocol, line)
	}
	return int(n), nil
}

// parseInt reads a decimal integer, as strconv.ParseInt(string(b), 10, 64) does but
// without making the string: a reply's every element is one.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg || len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	switch {
	case neg && v <= 1<<63:
		return int64(-v), true
	case !neg && v < 1<<63:
		return int64(v), true
	}
	return 0, false
}

// describeReply names the kind of reply whose first line is line.
func describeReply(line []byte) string {
	switch line[0] {
	case '+':
		return fmt.Sprintf("status %q", line[1:])
	case ':':
		return "integer " + string(line[1:])
	case '$':
		if string(line) == "$-1" {
			return "nil"
		}
		return "bulk string"
	case '*':
		return "array"
	}
	return fmt.Sprintf("%q", line)
}
