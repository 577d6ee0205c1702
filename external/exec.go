package external

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Exec runs a program as a limiter: a child process, started by /bin/sh -c Command, that
// reads one JSON object per line on its standard input,
//
//	{"t_ns":1767261659900000000,"key":"user_8812","cost":1,"limit":100,"window_ns":60000000000,"burst":100}
//
// (t_ns: virtual nanoseconds since the Unix epoch) and answers each, in order, with one
// line on its standard output,
//
//	{"allowed":true,"retry_after_ns":0}
//
// where retry_after_ns (optional; -1: never) says when a refused request could pass and an
// optional "remaining" the units left; other fields are ignored. Requests are written
// ahead of the answers (see Limiter.Ahead), so the program should answer every line it
// has read before it blocks for more input — flushing its output after each answer, or
// after each chunk it reads. Each limiter New builds is a fresh child; its standard error
// goes to Stderr. A child that exits or stops answering for Timeout, or answers something
// that is not such a line, fails the run at the request it was answering. Close ends the
// child: its input is closed, it is given Grace to exit, and then its process group is
// killed, so no process it started outlives it; it is always waited for.
type Exec struct {
	// Command is the command line, run by /bin/sh -c.
	Command string
	// Timeout bounds the wait for any one answer and for the child to take input
	// (0: DefaultTimeout).
	Timeout time.Duration
	// Grace is how long Close waits for the child to exit by itself once its input is
	// closed, before it kills it (0: DefaultGrace).
	Grace time.Duration
	// Depth is how many requests may be written ahead of the answers read (0: DefaultDepth).
	Depth int
	// Stderr receives the child's standard error (nil: discarded).
	Stderr io.Writer
	// SkipClockCheck leaves out the check, before the first limiter, that the program
	// decides by t_ns (see CheckClock).
	SkipClockCheck bool

	name   string
	stderr syncWriter // Stderr, shared by the children

	mu       sync.Mutex
	live     map[*execLimiter]bool     // every child running, deciding or idle
	idle     map[string][]*execLimiter // by policy: children whose limiter was closed unnamed
	sessions int
	stats    Rate
	cause    error // set by Interrupt
	checked  bool  // CheckClock has run (New runs it once)
}

// Rate is how many decisions a program answered and the wall time they took, from the
// first request written to the last answer read, summed over its limiters.
type Rate struct {
	Decisions int64
	Wall      time.Duration
}

// PerSecond is Decisions over Wall.
func (r Rate) PerSecond() float64 { return float64(r.Decisions) / r.Wall.Seconds() }

// Defaults of an Exec's zero fields.
const (
	DefaultTimeout = 10 * time.Second
	DefaultGrace   = 2 * time.Second
	DefaultDepth   = 4096
)

// maxAnswer bounds one answer line.
const maxAnswer = 64 << 10

// NewExec returns the limiter the command line runs, named after its program (see
// ExecName).
func NewExec(command string, stderr io.Writer) (*Exec, error) {
	name := ExecName(command)
	if name == "" {
		return nil, fmt.Errorf("limiter-exec %q: an empty command", command)
	}
	return &Exec{Command: command, Stderr: stderr, name: name}, nil
}

// ExecName is the algorithm name of a command line: the file name, without its extension,
// of the last word that names an existing file ("python3 examples/exec/token_bucket.py" →
// token_bucket), else of the first word ("./mylimiter --fast" → mylimiter).
func ExecName(command string) string {
	words := strings.Fields(command)
	if len(words) == 0 {
		return ""
	}
	pick := words[0]
	for _, w := range words[1:] {
		w = strings.Trim(w, `'"`)
		if st, err := os.Stat(w); err == nil && st.Mode().IsRegular() {
			pick = w
		}
	}
	pick = strings.Trim(pick, `'"`)
	return strings.TrimSuffix(filepath.Base(pick), filepath.Ext(pick))
}

// Name is the algorithm's name in reports.
func (e *Exec) Name() string { return e.name }

// Describe names the program for messages: "limiter-exec 'python3 x.py'".
func (e *Exec) Describe() string { return "limiter-exec '" + e.Command + "'" }

// Stats is what the program's closed limiters answered, and in how much wall time.
func (e *Exec) Stats() Rate {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Interrupt kills every child still running; each limiter's next answer is then an error
// wrapping cause.
func (e *Exec) Interrupt(cause error) {
	e.mu.Lock()
	e.cause = cause
	live := make([]*execLimiter, 0, len(e.live))
	for x := range e.live {
		live = append(live, x)
	}
	e.mu.Unlock()
	for _, x := range live {
		x.kill()
	}
}

// Close ends every child still running, deciding or idle, so none outlives the run
// whatever path ended it.
func (e *Exec) Close() error {
	e.mu.Lock()
	live := make([]*execLimiter, 0, len(e.live))
	for x := range e.live {
		live = append(live, x)
	}
	e.idle = nil
	e.mu.Unlock()
	for _, x := range live {
		x.shutdown()
	}
	return nil
}

// New returns a limiter of policy p with fresh state: a new child, or an idle one.
//
// A child whose limiter was closed without a key ever named (SetName), cleanly, waits for
// the next New of the same policy: its next limiter names its keys afresh ("s2:key-0"),
// so it holds no state for them, and is spared the program's start. The worst-case
// search, which builds a limiter per candidate schedule on one unnamed key, runs on one
// child this way; a run, which names its keys, gets a child of its own.
func (e *Exec) New(p algorithms.Policy) (algorithms.Limiter, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Describe(), err)
	}
	policy := policyLine(p)
	e.mu.Lock()
	cause := e.cause
	if list := e.idle[policy]; cause == nil && len(list) > 0 {
		x := list[len(list)-1]
		e.idle[policy] = list[:len(list)-1]
		e.sessions++
		x.reuse(e.sessions)
		e.mu.Unlock()
		return x, nil
	}
	check := !e.checked && !e.SkipClockCheck
	e.checked = true
	e.mu.Unlock()
	if cause != nil {
		return nil, cause
	}
	if check {
		if err := e.CheckClock(p); err != nil {
			return nil, err
		}
	}
	return e.spawn(policy)
}

// policyLine is the end of every request line under p.
func policyLine(p algorithms.Policy) string {
	return `,"limit":` + strconv.FormatInt(p.Limit, 10) + `,"window_ns":` + strconv.FormatInt(int64(p.Window), 10) +
		`,"burst":` + strconv.FormatInt(p.EffectiveBurst(), 10) + "}\n"
}

// spawn starts a child deciding under policy (the end of every request line).
func (e *Exec) spawn(policy string) (*execLimiter, error) {
	x := &execLimiter{e: e, timeout: e.Timeout, depth: e.Depth, policy: []byte(policy)}
	if x.timeout <= 0 {
		x.timeout = DefaultTimeout
	}
	if x.depth <= 0 {
		x.depth = DefaultDepth
	}
	if err := x.start(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.live == nil {
		e.live = map[*execLimiter]bool{}
	}
	e.live[x] = true
	e.mu.Unlock()
	return x, nil
}

// clockCheckMax bounds the burst CheckClock sends: a policy whose limit and burst add up
// to more is not checked.
const clockCheckMax = 10_000

// ClockCheckKey is the key CheckClock's requests carry.
const ClockCheckKey = "rlsim-clock-check"

// CheckClock asks a fresh child, under policy p, whether the program decides by t_ns or
// by a clock of its own. It sends Limit + Burst + 1 requests of cost 1 at one virtual
// instant, which every limiter of that policy refuses some of, and then one request a
// long virtual time later — four windows, or four times the time a bucket of Burst takes
// to refill at Limit per Window, plus a day — which every limiter that counts virtual
// time admits. A program on the wall clock sees the two a few milliseconds apart and
// refuses the last one too: that is an error saying how to fix the program. A program
// that admits all of the burst or none of it (it limits by something else, or not at
// all) cannot be told apart and passes, as does a policy too large to check
// (clockCheckMax).
func (e *Exec) CheckClock(p algorithms.Policy) error {
	burst := p.Limit + p.EffectiveBurst() + 1
	if burst > clockCheckMax || burst < 0 {
		return nil
	}
	x, err := e.spawn(policyLine(p))
	if err != nil {
		return fmt.Errorf("checking that it decides by t_ns: %w", err)
	}
	defer func() {
		x.answered = 0 // the check's answers are not the run's
		x.shutdown()
	}()
	x.SetName(0, ClockCheckKey)
	refills := min(max((p.EffectiveBurst()+p.Limit-1)/p.Limit, 1), 100)
	gap := 4*refills*int64(p.Window) + int64(24*time.Hour)
	start := clockCheckStart
	admitted, refused := false, false
	for sent := int64(0); sent < burst; {
		n := min(burst-sent, int64(x.Ahead()))
		for range n {
			x.Send(0, start, 1)
		}
		for range n {
			if x.Receive().Allowed {
				admitted = true
			} else {
				refused = true
			}
		}
		sent += n
	}
	late := x.Allow(0, start+gap, 1)
	if err := x.Err(); err != nil {
		return fmt.Errorf("checking that it decides by t_ns (key %q; --limiter-clock-check=false leaves the check out): %w", ClockCheckKey, err)
	}
	if admitted && refused && !late.Allowed {
		return fmt.Errorf("%s does not decide by the request's t_ns: it refused part of %d requests at one virtual instant, "+
			"and still refused one sent %s later in virtual time (a few milliseconds later on the wall clock). "+
			"A limiter run by rlsim must take its time from t_ns, not from its own clock — a JavaScript library reads Date.now(), "+
			"a Python one time.time(): replace that clock with the request's time (docs/own-limiters.md), "+
			"or pass --limiter-clock-check=false if the program refuses for good by design",
			e.Describe(), burst, time.Duration(gap))
	}
	return nil
}

// clockCheckStart is the virtual time of CheckClock's burst: 2026-01-01T00:00:00Z.
var clockCheckStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// answer is one line the child wrote, read.
type answer struct {
	d   algorithms.Decision
	err error // a line that is no answer, or the end of the child's output (io.EOF)
	// shape marks an err about the line's shape: the reader goes on reading after it.
	shape bool
}

// execLimiter is one child process deciding as a limiter.
type execLimiter struct {
	e       *Exec
	timeout time.Duration
	depth   int
	policy  []byte // the end of every request line

	cmd        *exec.Cmd
	in         *os.File
	w          *bufio.Writer
	answers    chan []answer // batches of answers, as they arrive
	got        []answer      // the batch being read
	readerDone chan struct{}
	out        *os.File      // the child's output, read by read
	exited     chan struct{} // closed when Wait has returned
	waitErr    error
	tail       *tailWriter
	timer      *time.Timer
	line       []byte

	names    names
	anon     string // before the names of keys never named: "" for a child's first limiter
	named    bool   // SetName was called
	keys     int
	sent     int64
	pending  queue[request]
	first    time.Time // when the first request was written
	last     time.Time // when the last answer was read
	answered int64
	err      error
	closed   bool // the limiter is closed (the child may wait for the next, see Exec.New)
	down     bool // the child is ended
	killed   bool
	killMu   sync.Mutex
}

var _ Limiter = (*execLimiter)(nil)

func (x *execLimiter) start() error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: %w", x.e.Describe(), err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return fmt.Errorf("%s: %w", x.e.Describe(), err)
	}
	// The child's stderr is a pipe of ours too, not a writer exec copies into: Wait then
	// returns when the child exits, even while a process it started holds the pipe open.
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return fmt.Errorf("%s: %w", x.e.Describe(), err)
	}
	x.e.stderr.mu.Lock()
	x.e.stderr.w = x.e.Stderr
	x.e.stderr.mu.Unlock()
	x.tail = &tailWriter{w: &x.e.stderr}
	cmd := exec.Command("/bin/sh", "-c", x.e.Command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = childAttr()
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return fmt.Errorf("%s: %w", x.e.Describe(), err)
	}
	go func() {
		io.Copy(x.tail, errR)
		errR.Close()
	}()
	x.cmd, x.in = cmd, inW
	x.w = bufio.NewWriterSize(inW, 64<<10)
	x.answers = make(chan []answer, x.depth+16)
	x.readerDone = make(chan struct{})
	x.exited = make(chan struct{})
	x.timer = time.NewTimer(time.Hour)
	x.timer.Stop()
	x.out = outR
	go x.read(outR)
	go func() {
		x.waitErr = cmd.Wait()
		close(x.exited)
	}()
	return nil
}

// read turns the child's output into answers until it ends. It hands them over in
// batches, as many as have arrived, so that a fast child costs one channel operation per
// chunk it writes rather than per answer.
func (x *execLimiter) read(out *os.File) {
	defer close(x.readerDone)
	defer out.Close()
	r := bufio.NewReaderSize(out, maxAnswer)
	var batch []answer
	for {
		line, err := r.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			batch = append(batch, answer{err: fmt.Errorf("answered a line longer than %d bytes", maxAnswer)})
		case err != nil && len(line) == 0:
			batch = append(batch, answer{err: io.EOF})
		default:
			batch = append(batch, parseAnswer(line))
			if err != nil {
				batch = append(batch, answer{err: io.EOF})
			}
		}
		if last := batch[len(batch)-1]; last.err != nil && !last.shape {
			x.answers <- batch
			return
		}
		if r.Buffered() == 0 || len(batch) >= answerBatch {
			x.answers <- batch
			batch = nil
		}
	}
}

// exitedDrain is how long an answer may take to come out of the pipe once the child
// has exited.
const exitedDrain = time.Second

// answerBatch bounds the answers handed over at once.
const answerBatch = 512

var (
	allowedLine = []byte(`{"allowed":true,"retry_after_ns":0}`)
	refusedHead = []byte(`{"allowed":false,"retry_after_ns":`)
)

// parseAnswer reads one answer line: the shapes rlsim's examples write without a JSON
// decoder, anything else with one.
func parseAnswer(line []byte) answer {
	line = bytes.TrimSpace(line)
	if bytes.Equal(line, allowedLine) {
		return answer{d: algorithms.Decision{Allowed: true}}
	}
	if rest, ok := bytes.CutPrefix(line, refusedHead); ok && len(rest) > 1 && rest[len(rest)-1] == '}' {
		if ns, err := strconv.ParseInt(string(rest[:len(rest)-1]), 10, 64); err == nil && ns >= 0 {
			return answer{d: algorithms.Decision{RetryAfter: time.Duration(ns)}}
		}
	}
	var a struct {
		Allowed      *bool  `json:"allowed"`
		RetryAfterNs *int64 `json:"retry_after_ns"`
		Remaining    *int64 `json:"remaining"`
	}
	if err := json.Unmarshal(line, &a); err != nil {
		return answer{shape: true, err: fmt.Errorf("answered %s, which is not a JSON object {\"allowed\": true|false, \"retry_after_ns\": N}: %v", quoteLine(line), err)}
	}
	if a.Allowed == nil {
		return answer{shape: true, err: fmt.Errorf("answered %s, which has no \"allowed\" field", quoteLine(line))}
	}
	d := algorithms.Decision{Allowed: *a.Allowed}
	if a.Remaining != nil {
		d.Remaining = max(*a.Remaining, 0)
	}
	if a.RetryAfterNs != nil && !d.Allowed {
		switch ns := *a.RetryAfterNs; {
		case ns == -1:
			d.RetryAfter = algorithms.Never
		case ns < 0:
			return answer{shape: true, err: fmt.Errorf("answered %s: retry_after_ns must be 0 or more, or -1 for never", quoteLine(line))}
		default:
			d.RetryAfter = time.Duration(ns)
		}
	}
	return answer{d: d}
}

func quoteLine(line []byte) string {
	if len(line) > 80 {
		return strconv.Quote(string(line[:80])) + "…"
	}
	return strconv.Quote(string(line))
}

func (x *execLimiter) Name() string { return x.e.name }

func (x *execLimiter) SetName(key uint32, name string) {
	x.named = true
	x.setName(key, name)
}

func (x *execLimiter) setName(key uint32, name string) {
	if int(key) >= len(x.names) || x.names[key] == "" {
		x.keys++
	}
	x.names.set(key, name)
}

// reuse readies an idle child for the limiter of session n.
func (x *execLimiter) reuse(n int) {
	x.names, x.anon, x.named, x.keys, x.sent, x.answered = nil, "s"+strconv.Itoa(n)+":", false, 0, 0, 0
	x.first, x.last = time.Time{}, time.Time{}
	x.closed = false
}

// Keys is the number of keys named or decided.
func (x *execLimiter) Keys() int { return x.keys }

// StateBytes is -1: the state is the program's, not this process's to count.
func (x *execLimiter) StateBytes() int64 { return -1 }

// Ahead is how many requests a run may write before it reads an answer.
func (x *execLimiter) Ahead() int { return x.depth }

func (x *execLimiter) Allow(key uint32, now, cost int64) algorithms.Decision {
	x.Send(key, now, cost)
	return x.Receive()
}

// Send writes a request line. Once the limiter has failed nothing is written: the
// decision is a refusal.
func (x *execLimiter) Send(key uint32, now, cost int64) {
	x.sent++
	if int(key) >= len(x.names) || x.names[key] == "" {
		x.setName(key, x.anon+x.names.of(key))
	}
	name := x.names[key]
	x.pending.push(request{key: name, now: now, cost: cost, index: x.sent})
	if x.err != nil {
		return
	}
	if x.first.IsZero() {
		x.first = time.Now()
	}
	l := append(x.line[:0], `{"t_ns":`...)
	l = strconv.AppendInt(l, now, 10)
	l = append(l, `,"key":`...)
	l = appendJSONString(l, name)
	l = append(l, `,"cost":`...)
	l = strconv.AppendInt(l, max(cost, 1), 10)
	l = append(l, x.policy...)
	x.line = l
	if x.w.Available() < len(l) {
		x.in.SetWriteDeadline(time.Now().Add(x.timeout))
	}
	if _, err := x.w.Write(l); err != nil {
		x.fail(x.pending.items[x.pending.head], x.writeError(err))
	}
}

// Receive reads the answer to the oldest request sent.
func (x *execLimiter) Receive() algorithms.Decision {
	r := x.pending.pop()
	if x.err != nil {
		return algorithms.Decision{}
	}
	if len(x.got) == 0 {
		select {
		case x.got = <-x.answers:
		default:
			x.in.SetWriteDeadline(time.Now().Add(x.timeout))
			if err := x.w.Flush(); err != nil {
				x.fail(r, x.writeError(err))
				return algorithms.Decision{}
			}
			x.timer.Reset(x.timeout)
			select {
			case x.got = <-x.answers:
				x.timer.Stop()
			case <-x.exited:
				// The child is gone, though a process it started may hold its output
				// open: what it wrote before it exited is in the pipe already.
				x.timer.Stop()
				select {
				case x.got = <-x.answers:
				case <-time.After(exitedDrain):
					x.fail(r, x.readError(io.EOF))
					return algorithms.Decision{}
				}
			case <-x.timer.C:
				x.fail(r, fmt.Errorf("no answer within %s: the program hangs, or waits for more input before it answers (flush after each answer)", x.timeout))
				return algorithms.Decision{}
			}
		}
	}
	a := x.got[0]
	x.got = x.got[1:]
	if a.err != nil {
		x.fail(r, x.readError(a.err))
		return algorithms.Decision{}
	}
	x.answered++
	x.last = time.Now()
	return a.d
}

// readError explains an answer that is not one.
func (x *execLimiter) readError(err error) error {
	if err != io.EOF {
		return err
	}
	if c := x.interrupted(); c != nil {
		return c
	}
	// The output ended: the child exited or closed it. Wait briefly for its status.
	select {
	case <-x.exited:
	case <-time.After(x.timeout):
	}
	status := "closed its output"
	select {
	case <-x.exited:
		status = "exited"
		if x.waitErr != nil {
			status = "exited (" + x.waitErr.Error() + ")"
		}
	default:
	}
	msg := fmt.Sprintf("the program %s before answering, after %d answers", status, x.answered)
	if last := x.tail.last(); last != "" {
		msg += fmt.Sprintf("; the last line of its stderr: %q", last)
	}
	return errors.New(msg)
}

// writeError explains a request that could not be written.
func (x *execLimiter) writeError(err error) error {
	if c := x.interrupted(); c != nil {
		return c
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("the program has read no input for %s: it hangs", x.timeout)
	}
	// A broken pipe: the child is gone; say how it ended.
	return x.readError(io.EOF)
}

func (x *execLimiter) interrupted() error {
	x.e.mu.Lock()
	defer x.e.mu.Unlock()
	return x.e.cause
}

// fail records the first failure, at request r, and kills the child: nothing it says
// from here on can be trusted to match its request.
func (x *execLimiter) fail(r request, err error) {
	if x.err != nil {
		return
	}
	if c := x.interrupted(); c != nil && errors.Is(err, c) {
		x.err = err
	} else {
		x.err = fmt.Errorf("%s: %s: %w", x.e.Describe(), r, err)
	}
	x.kill()
}

func (x *execLimiter) Err() error { return x.err }

// kill ends the child's process group at once.
func (x *execLimiter) kill() {
	x.killMu.Lock()
	defer x.killMu.Unlock()
	if x.killed || x.cmd == nil {
		return
	}
	x.killed = true
	killGroup(x.cmd.Process)
}

// Close ends the limiter and returns Err: the child waits for the next limiter of its
// policy when it may (see Exec.New), or is ended (see Exec) — and then an extra answer, or
// an exit status other than 0 once its input is closed, is an error of its own.
func (x *execLimiter) Close() error {
	if x.closed {
		return x.err
	}
	x.closed = true
	if x.err == nil && !x.named && x.pending.len() == 0 && len(x.got) == 0 && x.interrupted() == nil {
		x.e.mu.Lock()
		defer x.e.mu.Unlock()
		x.account()
		if x.e.idle == nil {
			x.e.idle = map[string][]*execLimiter{}
		}
		x.e.idle[string(x.policy)] = append(x.e.idle[string(x.policy)], x)
		return nil
	}
	return x.shutdown()
}

// account adds what the limiter answered to its Exec's Stats; e.mu is held.
func (x *execLimiter) account() {
	if x.answered > 0 {
		x.e.stats.Decisions += x.answered
		x.e.stats.Wall += x.last.Sub(x.first)
	}
	x.answered = 0
}

// shutdown ends the child once, and returns Err.
func (x *execLimiter) shutdown() error {
	x.e.mu.Lock()
	if x.down {
		x.e.mu.Unlock()
		return x.err
	}
	x.down = true
	x.e.mu.Unlock()
	x.closed = true
	if x.err == nil {
		x.in.SetWriteDeadline(time.Now().Add(x.timeout))
		if err := x.w.Flush(); err != nil && x.pending.len() > 0 {
			x.fail(x.pending.pop(), x.writeError(err))
		}
	}
	x.in.Close()
	grace := x.e.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	exitedByItself := false
	select {
	case <-x.exited:
		exitedByItself = true
	case <-time.After(grace):
	}
	x.kill() // whatever the child started goes with it
	<-x.exited
	// A process that left the child's group may still hold its output open: stop
	// reading it rather than wait for it.
	select {
	case <-x.readerDone:
	case <-time.After(grace):
		x.out.Close()
	}
	// Drain what the child wrote after its last answer read (the reader may be blocked
	// handing it over): any line there is an answer to no request.
	extra := 0
	count := func(batch []answer) {
		for _, a := range batch {
			if a.err != io.EOF {
				extra++
			}
		}
	}
	count(x.got)
	for drained := false; !drained; {
		select {
		case b := <-x.answers:
			count(b)
		case <-x.readerDone:
			for len(x.answers) > 0 {
				count(<-x.answers)
			}
			drained = true
		}
	}
	if x.err == nil && extra > 0 {
		x.err = fmt.Errorf("%s: the program answered %d more lines than the %d requests it was sent", x.e.Describe(), extra, x.sent)
	}
	if x.err == nil && exitedByItself && x.waitErr != nil {
		x.err = fmt.Errorf("%s: the program %s at the end of its input", x.e.Describe(), x.waitErr)
	}
	x.e.mu.Lock()
	delete(x.e.live, x)
	x.account()
	x.e.mu.Unlock()
	return x.err
}

// Pid is the child's process id (its process group's too).
func (x *execLimiter) Pid() int { return x.cmd.Process.Pid }

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// syncWriter serializes the writes of several children's stderr.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

// tailWriter passes the child's stderr on and keeps its last line for error messages.
type tailWriter struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-4096:]...)
	}
	t.mu.Unlock()
	if t.w != nil {
		t.w.Write(p)
	}
	return len(p), nil
}

func (t *tailWriter) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
