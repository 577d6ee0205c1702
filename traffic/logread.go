package traffic

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Placements are the rules for placing the requests of one whole second (a log whose
// times have no fraction) inside that second, by the name --subsecond takes.
//
//	start    every request at the second's start, in the order of the lines: the rule
//	         rlsim has always used, and the default. A second's requests meet the
//	         limiter as one burst.
//	uniform  each request at an offset inside its second drawn from the seed and the
//	         line's number (the offset is 1 s × a hash of both over 2⁶⁴), so the
//	         same log and seed place every line the same way, on any number of
//	         workers and in every shard.
var Placements = []string{"start", "uniform"}

// PlacementDocs says in a sentence what each placement can change, for reports.
var PlacementDocs = map[string]string{
	"start":   "every request of a second at its start, in line order: a second's requests arrive as one burst, which refuses more under windows or buckets shorter than a few seconds, and backend_peak counts a second's requests at one instant",
	"uniform": "each request of a second at a seeded random offset inside it: bursts within a second are smoothed out, which admits more under short windows and can move backend_peak by up to a second's requests",
}

// MaxLogProblems is how many unread lines a LogReader keeps by line number.
const MaxLogProblems = 10

// maxLogLine bounds one line; a longer one ends the read with an error rather than
// growing without end.
const maxLogLine = 1 << 20

// chunkBytes is how much of a log one worker parses at a time: lines are cut at the last
// newline of a chunk, so a chunk holds thousands of lines and handing it on costs nothing
// per line.
const chunkBytes = 256 << 10

// LogReaderOptions configure a LogReader.
type LogReaderOptions struct {
	// Format is the log's format and Config what the run reads of it.
	Format LogFormat
	Config LogConfig
	// Workers is how many goroutines parse chunks of the log at once (0: GOMAXPROCS).
	// The lines come out the same whatever the number.
	Workers int
	// Reorder is how far back in time a line may be behind the latest line before it and
	// still be put in its place: servers write a line when a request completes, and merged
	// logs interleave. A line further back is skipped, counted and named.
	Reorder time.Duration
	// Placement places the requests of whole seconds (one of Placements; "" is start),
	// with offsets drawn from Seed.
	Placement string
	Seed      uint64
	// Strict makes the first unread line an error.
	Strict bool
	// Keep, when not nil, chooses the requests replayed (a shard's); the others are read
	// and counted — the span and order of the whole log stay every shard's — but not
	// returned. It is called from the parsing goroutines.
	Keep func(*Request) bool
}

// LogProblem is one line a LogReader did not replay.
type LogProblem struct {
	Line   int
	Reason string
	// Late says the line was readable but further out of order than the reorder window.
	Late bool
}

func (p LogProblem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Reason) }

// LogStats is what a LogReader has read so far.
type LogStats struct {
	// Lines counts the lines read (blank ones too; a header line not).
	Lines int
	// Used counts the lines returned; Unreadable those that could not be read; Late those
	// further out of order than the reorder window; OtherShard those Keep left out.
	Used, Unreadable, Late, OtherShard int
	// Problems are the first MaxLogProblems unread lines, in line order.
	Problems []LogProblem
	// First and Last are the earliest and latest arrival of the lines read in order (of
	// every shard), in nanoseconds of Unix time; FirstLine and LastLine their lines.
	First, Last         int64
	FirstLine, LastLine int
	// Whole counts the lines (of this shard) whose times had whole seconds only.
	Whole int
	// Buffered is the most lines the reorder window held at once.
	Buffered int
}

// Skipped is every line read and not returned, whatever the reason.
func (s LogStats) Skipped() int { return s.Unreadable + s.Late + s.OtherShard }

// LogReader reads an access log line by line, parsing chunks of it on several goroutines,
// and returns its requests in arrival order: within the reorder window, lines are put in
// their place; a line the format cannot read, or further out of order than the window,
// is counted and named, never dropped in silence. Its memory is the chunks in flight and
// the lines of one reorder window, whatever the log's length.
type LogReader struct {
	o      LogReaderOptions
	parser LineParser
	raw    *countingReader
	lineNo int // lines before the first chunk (the header)

	// The parsing pipeline: the splitter cuts the input into chunks, the workers parse
	// them, and Next takes them in order.
	chunks  []*logChunk // every chunk, for ChunkBytes
	free    chan *logChunk
	work    chan *logChunk
	ordered chan *logChunk
	stop    chan struct{}
	stopped atomic.Bool

	cur  *logChunk
	next int // the next line of cur

	buf     reorderBuffer
	seen    bool
	maxRaw  int64 // the latest raw (unplaced) time read, and its line
	maxLine int
	eof     bool
	stats   LogStats
	err     error
}

// parsedLine is a line as a worker leaves it for Next.
type parsedLine struct {
	LogLine
	raw     int64 // the time the line gives, before placement
	problem string
	keep    bool
}

type logChunk struct {
	data      []byte
	firstLine int
	count     int // the lines in data
	lines     []parsedLine
	err       error         // the input could not be read past this chunk
	parsed    chan struct{} // closed when the lines are parsed
}

// OpenLog starts reading the log in r. Gzip input is recognised by its magic bytes.
// A format whose first line is a header reads it here, so a bad header is an error before
// anything runs.
func OpenLog(r io.Reader, o LogReaderOptions) (*LogReader, error) {
	if o.Placement == "" {
		o.Placement = "start"
	}
	if !slices.Contains(Placements, o.Placement) {
		return nil, fmt.Errorf("unknown placement %q (want %s)", o.Placement, strings.Join(Placements, " or "))
	}
	if o.Reorder < 0 {
		return nil, fmt.Errorf("reorder window must not be negative, got %s", o.Reorder)
	}
	parser, err := o.Format.New(o.Config)
	if err != nil {
		return nil, err
	}
	lr := &LogReader{o: o, parser: parser, raw: &countingReader{r: r}}
	in := bufio.NewReaderSize(lr.raw, 64<<10)
	var src io.Reader = in
	if magic, _ := in.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		src = zr
	}
	body := bufio.NewReaderSize(src, 64<<10)
	if hp, ok := parser.(HeaderParser); ok && o.Format.Header {
		line, err := readLine(body)
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the log holds no requests")
			}
			return nil, err
		}
		lr.lineNo = 1
		if err := hp.Header(line); err != nil {
			return nil, fmt.Errorf("line 1: %w", err)
		}
	}
	lr.start(body)
	return lr, nil
}

// readLine reads one line of at most maxLogLine bytes, without its line end.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxLogLine {
			return nil, fmt.Errorf("line 1: longer than %d bytes; is this an access log?", maxLogLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

func (lr *LogReader) start(body io.Reader) {
	workers := lr.o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	inFlight := 2*workers + 2
	lr.free = make(chan *logChunk, inFlight)
	for range inFlight {
		c := &logChunk{}
		lr.chunks = append(lr.chunks, c)
		lr.free <- c
	}
	lr.work = make(chan *logChunk, inFlight)
	lr.ordered = make(chan *logChunk, inFlight)
	lr.stop = make(chan struct{})
	go lr.split(body)
	for range workers {
		go lr.parse()
	}
}

// Close stops the goroutines reading the log; they end as soon as they can (one waiting
// on a read of stdin ends when the read returns). It may be called at any time, and more
// than once.
func (lr *LogReader) Close() {
	if lr.stopped.CompareAndSwap(false, true) {
		close(lr.stop)
	}
}

// split cuts the input into chunks of whole lines and hands each to the workers and, in
// order, to Next.
func (lr *LogReader) split(body io.Reader) {
	defer close(lr.ordered)
	defer close(lr.work)
	line := lr.lineNo + 1
	var carry []byte
	for {
		var c *logChunk
		select {
		case c = <-lr.free:
		case <-lr.stop:
			return
		}
		c.data = append(c.data[:0], carry...)
		c.err, c.lines, c.firstLine = nil, c.lines[:0], line
		c.parsed = make(chan struct{})
		var readErr error
		for readErr == nil {
			if len(c.data) >= chunkBytes && bytes.IndexByte(c.data[len(c.data)-min(len(c.data), chunkBytes):], '\n') >= 0 {
				break
			}
			if len(c.data) > maxLogLine && bytes.IndexByte(c.data, '\n') < 0 {
				readErr = fmt.Errorf("line %d: longer than %d bytes; is this an access log?", line, maxLogLine)
				break
			}
			if cap(c.data)-len(c.data) < 64<<10 {
				c.data = slices.Grow(c.data, chunkBytes)
			}
			n, err := body.Read(c.data[len(c.data):cap(c.data)])
			c.data = c.data[:len(c.data)+n]
			readErr = err
		}
		atEOF := errors.Is(readErr, io.EOF)
		if readErr != nil && !atEOF {
			c.err = readErr
		}
		cut := len(c.data)
		if !atEOF || c.err != nil {
			cut = bytes.LastIndexByte(c.data, '\n') + 1
		}
		carry = append(carry[:0], c.data[cut:]...)
		c.data = c.data[:cut]
		c.count = bytes.Count(c.data, []byte{'\n'})
		if len(c.data) > 0 && c.data[len(c.data)-1] != '\n' {
			c.count++
		}
		line += c.count
		select {
		case lr.work <- c:
		case <-lr.stop:
			return
		}
		select {
		case lr.ordered <- c:
		case <-lr.stop:
			return
		}
		if readErr != nil {
			return
		}
	}
}

// parse parses the chunks the splitter hands on.
func (lr *LogReader) parse() {
	for c := range lr.work {
		lr.parseChunk(c)
		close(c.parsed)
	}
}

func (lr *LogReader) parseChunk(c *logChunk) {
	if cap(c.lines) < c.count {
		c.lines = make([]parsedLine, 0, c.count+c.count/8)
	}
	data := c.data
	line := c.firstLine
	for len(data) > 0 {
		end := bytes.IndexByte(data, '\n')
		var text []byte
		if end < 0 {
			text, data = data, nil
		} else {
			text, data = data[:end], data[end+1:]
		}
		text = bytes.TrimSuffix(text, []byte{'\r'})
		c.lines = c.lines[:len(c.lines)+1]
		p := &c.lines[len(c.lines)-1]
		*p = parsedLine{}
		p.Line = line
		line++
		if len(bytes.TrimSpace(text)) == 0 {
			p.problem = "blank line"
			continue
		}
		if err := lr.parser.Parse(text, &p.LogLine); err != nil {
			p.problem = err.Error()
			if p.problem == "" {
				p.problem = "cannot be read"
			}
			continue
		}
		if p.Request.Cost == 0 {
			p.Request.Cost = 1
		}
		p.raw = p.Time
		if p.Whole && lr.o.Placement == "uniform" {
			p.Time += placeInSecond(lr.o.Seed, p.Line)
		}
		p.keep = lr.o.Keep == nil || lr.o.Keep(&p.Request)
	}
}

// placeInSecond is the uniform placement's offset of line inside its second: 1 s times a
// hash of the seed and the line number over 2⁶⁴.
func placeInSecond(seed uint64, line int) int64 {
	x := seed ^ uint64(line)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	hi, _ := bits.Mul64(x, uint64(time.Second))
	return int64(hi)
}

// Next fills l with the next request in arrival order (ties in line order) and reports
// whether there was one; at the end, Err says whether the log was read to its end.
func (lr *LogReader) Next(l *LogLine) bool {
	next := lr.NextLine()
	if next != nil {
		*l = *next
	}
	return next != nil
}

// NextLine is Next without a copy: the line it returns is the reader's, good until the
// next call; nil at the end.
func (lr *LogReader) NextLine() *LogLine {
	lr.buf.release()
	for {
		if lr.err != nil {
			return nil
		}
		if lr.buf.Len() > 0 && (lr.eof || behind(lr.maxRaw, lr.buf.min().Time) >= int64(lr.o.Reorder)) {
			lr.stats.Used++
			return lr.buf.pop()
		}
		if lr.eof {
			return nil
		}
		p := lr.nextParsed()
		if p == nil {
			continue
		}
		lr.take(p)
	}
}

// nextParsed returns the next parsed line in input order, or nil at the end of a chunk.
func (lr *LogReader) nextParsed() *parsedLine {
	if lr.cur != nil && lr.next < len(lr.cur.lines) {
		p := &lr.cur.lines[lr.next]
		lr.next++
		return p
	}
	if lr.cur != nil {
		if err := lr.cur.err; err != nil {
			lr.err = err
			return nil
		}
		lr.free <- lr.cur
		lr.cur = nil
	}
	c, ok := <-lr.ordered
	if !ok {
		lr.eof = true
		return nil
	}
	<-c.parsed
	lr.cur, lr.next = c, 0
	return nil
}

// take accounts for one parsed line and buffers it when it is replayed.
func (lr *LogReader) take(p *parsedLine) {
	s := &lr.stats
	s.Lines++
	if p.problem != "" {
		s.Unreadable++
		lr.problem(LogProblem{Line: p.Line, Reason: p.problem})
		return
	}
	if lr.seen && behind(lr.maxRaw, p.raw) > int64(lr.o.Reorder) {
		s.Late++
		lr.problem(LogProblem{Line: p.Line, Late: true, Reason: fmt.Sprintf("%s is %s before line %d's %s, further out of order than the reorder window (%s)",
			clock(p.raw), time.Duration(lr.maxRaw-p.raw), lr.maxLine, clock(lr.maxRaw), lr.o.Reorder)})
		return
	}
	if !lr.seen || p.raw > lr.maxRaw {
		lr.maxRaw, lr.maxLine = p.raw, p.Line
	}
	if !lr.seen || p.Time < s.First {
		s.First, s.FirstLine = p.Time, p.Line
	}
	if !lr.seen || p.Time > s.Last {
		s.Last, s.LastLine = p.Time, p.Line
	}
	lr.seen = true
	if !p.keep {
		s.OtherShard++
		return
	}
	if p.Whole {
		s.Whole++
	}
	lr.buf.push(&p.LogLine)
	s.Buffered = max(s.Buffered, lr.buf.Len())
}

func (lr *LogReader) problem(p LogProblem) {
	if lr.o.Strict && lr.err == nil {
		lr.err = &LineError{Line: p.Line, Reason: p.Reason}
	}
	if len(lr.stats.Problems) < MaxLogProblems {
		lr.stats.Problems = append(lr.stats.Problems, p)
	}
}

// LineError is the error of a line a strict read could not replay; File, when the caller
// sets it, places it as file:line.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

// clock writes a time of day as the problems name it.
func clock(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.999999999Z") }

// Err is what stopped the read before the end of the log: an input that could not be
// read, a line too long to be one, or, with Strict, the first unread line.
func (lr *LogReader) Err() error { return lr.err }

// Stats is what the reader has read so far.
func (lr *LogReader) Stats() LogStats { return lr.stats }

// BytesRead is how much of the input (as stored: compressed, when it is) has been read;
// it may be called from any goroutine.
func (lr *LogReader) BytesRead() int64 { return lr.raw.n.Load() }

// BufferBytes is what the reorder window holds: the room it grew to for its lines
// (strings they carry are on top).
func (lr *LogReader) BufferBytes() int64 { return lr.buf.bytes() }

// ChunkBytes is what the chunks of the log in flight hold: their bytes and their parsed
// lines. Call it once the log is read.
func (lr *LogReader) ChunkBytes() int64 {
	var n int64
	for _, c := range lr.chunks {
		n += int64(cap(c.data)) + int64(cap(c.lines))*int64(unsafe.Sizeof(parsedLine{}))
	}
	return n
}

// behind is how far a is after b, in nanoseconds, saturating rather than overflowing.
func behind(a, b int64) int64 {
	d := a - b
	if (a >= b) != (d >= 0) {
		if a >= b {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// reorderBuffer holds the lines of the reorder window in arrival order. Lines come in
// sorted runs — in order, or interleaved from the buffers of a few servers, each in order
// — so a line joins the first run whose last line is not after it, each run a ring; the
// next line is the earliest of the runs' first lines. A line that fits no run once there
// are maxRuns goes on a heap of small entries pointing into a slab of lines. Nothing is
// allocated per line once the buffer has grown to the window.
type reorderBuffer struct {
	runs       []lineRun
	n          int         // lines on the runs
	next       int         // the run holding the next line, -1 for the heap; valid when known
	known      bool        // next is up to date
	late       []lateEntry // a heap by (time, line)
	slab       []LogLine   // the late lines, by slot
	free       []int32     // slots of slab not in use
	popped     *LogLine    // the line pop returned last, to clear and free on release
	poppedSlot int32       // its slab slot, or -1 for a run
}

// maxRuns is how many sorted runs the buffer keeps before lines go on its heap: the
// next line is found among the runs' heads, one comparison a run.
const maxRuns = 8

// lineRun is a ring of lines in arrival order.
type lineRun struct {
	ring       []LogLine
	head, size int
}

func (r *lineRun) first() *LogLine { return &r.ring[r.head] }
func (r *lineRun) last() *LogLine  { return &r.ring[(r.head+r.size-1)%len(r.ring)] }

func (r *lineRun) add(l *LogLine) {
	if r.size == len(r.ring) {
		grown := make([]LogLine, max(2*len(r.ring), 64))
		for i := range r.size {
			grown[i] = r.ring[(r.head+i)%len(r.ring)]
		}
		r.ring, r.head = grown, 0
	}
	r.ring[(r.head+r.size)%len(r.ring)] = *l
	r.size++
}

type lateEntry struct {
	time int64
	line int
	slot int32
}

func (b *reorderBuffer) Len() int { return b.n + len(b.late) }

func before(a, b *LogLine) bool {
	return a.Time < b.Time || a.Time == b.Time && a.Line < b.Line
}

func (e lateEntry) before(f lateEntry) bool {
	return e.time < f.time || e.time == f.time && e.line < f.line
}

func (b *reorderBuffer) push(l *LogLine) {
	for i := range b.runs {
		if r := &b.runs[i]; r.size == 0 || !before(l, r.last()) {
			r.add(l)
			b.pushed(i, r.last())
			return
		}
	}
	if len(b.runs) < maxRuns {
		b.runs = append(b.runs, lineRun{})
		i := len(b.runs) - 1
		b.runs[i].add(l)
		b.pushed(i, b.runs[i].last())
		return
	}
	b.pushLate(l)
	if b.known && b.Len() > 1 && before(&b.slab[b.late[0].slot], b.min()) {
		b.next = -1
	} else if b.Len() == 1 {
		b.next, b.known = -1, true
	}
}

// pushed keeps the next line known after l was added to run i.
func (b *reorderBuffer) pushed(i int, l *LogLine) {
	b.n++
	switch {
	case b.Len() == 1:
		b.next, b.known = i, true
	case b.known && before(l, b.min()):
		b.next = i
	}
}

func (b *reorderBuffer) pushLate(l *LogLine) {
	var slot int32
	if n := len(b.free); n > 0 {
		slot, b.free = b.free[n-1], b.free[:n-1]
	} else {
		slot = int32(len(b.slab))
		b.slab = append(b.slab, LogLine{})
	}
	b.slab[slot] = *l
	b.late = append(b.late, lateEntry{time: l.Time, line: l.Line, slot: slot})
	for i := len(b.late) - 1; i > 0; {
		parent := (i - 1) / 2
		if !b.late[i].before(b.late[parent]) {
			break
		}
		b.late[i], b.late[parent] = b.late[parent], b.late[i]
		i = parent
	}
}

// min is the next line; the buffer must not be empty.
func (b *reorderBuffer) min() *LogLine {
	if !b.known {
		b.next, b.known = -1, true
		var best *LogLine
		if len(b.late) > 0 {
			best = &b.slab[b.late[0].slot]
		}
		for i := range b.runs {
			if r := &b.runs[i]; r.size > 0 && (best == nil || before(r.first(), best)) {
				b.next, best = i, r.first()
			}
		}
	}
	if b.next >= 0 {
		return b.runs[b.next].first()
	}
	return &b.slab[b.late[0].slot]
}

// pop takes the next line off the buffer and returns it; it stays where it is, the
// caller's, until release.
func (b *reorderBuffer) pop() *LogLine {
	b.min()
	b.known = false
	if i := b.next; i >= 0 {
		r := &b.runs[i]
		b.popped, b.poppedSlot = r.first(), -1
		r.head = (r.head + 1) % len(r.ring)
		r.size--
		b.n--
		return b.popped
	}
	top := b.late[0].slot
	b.popped, b.poppedSlot = &b.slab[top], top
	last := len(b.late) - 1
	b.late[0] = b.late[last]
	b.late = b.late[:last]
	for i := 0; ; {
		small, left, right := i, 2*i+1, 2*i+2
		if left < last && b.late[left].before(b.late[small]) {
			small = left
		}
		if right < last && b.late[right].before(b.late[small]) {
			small = right
		}
		if small == i {
			break
		}
		b.late[i], b.late[small] = b.late[small], b.late[i]
		i = small
	}
	return b.popped
}

// release lets go of the line pop returned last: its strings, and its slab slot. A run's
// ring slot is reused only once the ring wraps, after the line was released.
func (b *reorderBuffer) release() {
	if b.popped == nil {
		return
	}
	*b.popped = LogLine{}
	if b.poppedSlot >= 0 {
		b.free = append(b.free, b.poppedSlot)
	}
	b.popped = nil
}

// bytes is what the buffer holds at its fullest: its runs' rings and its slab of lines.
func (b *reorderBuffer) bytes() int64 {
	n := len(b.slab)
	for _, r := range b.runs {
		n += len(r.ring)
	}
	return int64(n) * int64(unsafe.Sizeof(LogLine{}))
}
