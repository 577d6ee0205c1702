package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Stream sends batches of script calls to a store one after another, each batch on its way
// before the replies of the one before are back, so that the server works through a batch
// while the caller makes the next and measures the last. The replies of each batch are
// those EvalBatch would give for the batches in turn: a client's calls reach the server in
// the order they were sent.
//
// On a real server a batch is split by client over the face's lanes (laneOf over SetLanes
// lanes, the same for every batch of the stream), and each lane keeps one connection
// while pipelines are on it: a lane's pipeline of a batch is written on it as soon as the
// same lane's pipeline of the batch before has been written, before that one's replies
// are back, so the server has the lane's next calls in hand when it is done with the last
// (Redis runs a connection's commands in the order they come). The replies are read in the
// same order; see streamLane for a server that has lost its scripts meanwhile. On several
// lanes, a batch that cannot be split (too small, a call of no client) leaves when every
// lane is done, on a wire of its own. On another Batcher (miniredis) each batch leaves, whole, when the
// one before is back; any other store decides a batch at once, in Send.
//
// A Stream is used by one goroutine, and nothing else may use the store while a batch is
// on its way. After a batch fails, nothing more is written: the batches after it fail
// with errStopped, or, those already written, finish.
type Stream struct {
	st    Store
	real  *Redis        // a real server's face; nil: whole batches
	tail  chan struct{} // off a real server: closed when the last batch is back
	lanes []*streamLane // on a real server, one per lane of the face
	stop  atomic.Bool   // a batch failed
	// loading is held for reading by every pipeline from before it is written until its
	// replies are read, and for writing while scripts are loaded: the scripts come back
	// only when no pipeline is on its way, so none meets them back in its middle (its later
	// calls would run before its failed ones), nor does a pipeline written behind one that
	// met NOSCRIPT on the same connection.
	loading sync.RWMutex
	// reloads counts the times the stream loaded its scripts again (under loading, held
	// for writing), so that the lanes that met NOSCRIPT before the same reload load them once.
	reloads int64
	// sent is every script the stream has sent, which a lane that met NOSCRIPT loads
	// again, all of them: a lane that loaded only its own would leave another's pipeline
	// meeting a script back after one still missing.
	sent struct {
		sync.Mutex
		scripts []*Script
	}
}

// A streamLane is one lane of a stream to a real server: the wire its pipelines are
// written on, several on it at once, and the turns that keep them in order.
//
// A pipeline takes three turns, each after the same turn of the lane's pipeline before
// it: it is written on the wire, its replies are read, and it is finished, its calls that
// met NOSCRIPT sent again. A server that has lost its scripts answers NOSCRIPT from some
// call of a pipeline on, and to every call written on the connection after it until the
// scripts are back, which cannot happen while those are on their way (Stream.loading).
// The pipeline that met it marks the lane lost: from then on no pipeline is written on
// the wire; in their third turn, in order, the pipeline that met it loads the scripts
// again, once every pipeline on its way is back, and sends its calls from the failed one
// on, then each pipeline after it its own (the NOSCRIPT ones, or all when not written),
// the last of them clearing the mark. So a client's calls run in the order they were
// made, whatever was written behind them.
type streamLane struct {
	// written, read and done are the turns of the lane's last pipeline: closed when it
	// has been written (or will not be), read, and finished.
	written, read, done chan struct{}

	mu     sync.Mutex
	w      *wire // the wire while pipelines are on it; nil: none
	onWire int   // pipelines written, or being written, on w whose replies are not all read
	writes int64 // pipelines that have taken their write turn (their numbers, from 1)
	// broken is the number of the first pipeline whose I/O on w failed (0: none): those
	// written after it fail without reading, and w is closed rather than given back.
	broken int64
	lost   bool // a reply on the lane was NOSCRIPT, and not every call behind it is sent again
}

// lanePipe is one pipeline of a batch on a lane of a stream: the indexes of its calls in
// the batch, and what its turns learn.
type lanePipe struct {
	calls  []Call
	clocks []int64
	idx    []int
	out    [][]int64

	seq      int64  // its number among the lane's pipelines
	w        *wire  // the wire it was written on; nil: not written
	reloads  int64  // Stream.reloads when it was written
	rest     []int  // its calls to send again in its last turn
	noScript bool   // rest met NOSCRIPT (else it was never written)
	end      func() // ends its round trip for the face's watch
}

// errStopped is the error of a batch sent after one that failed.
var errStopped = errors.New("not sent: an earlier batch of the stream failed")

// NewStream returns a stream of batches to st.
func NewStream(st Store) *Stream {
	s := &Stream{st: st}
	if r, ok := st.(*Redis); ok && r.mini == nil {
		s.real = r
		s.lanes = make([]*streamLane, max(r.lanes, 1))
		for l := range s.lanes {
			s.lanes[l] = &streamLane{}
		}
	}
	return s
}

// Pending is a batch on its way; Wait returns its replies.
type Pending struct {
	done []chan struct{} // one per pipeline of the batch, closed when it is back
	out  [][]int64
	errs []error // per pipeline
}

// Wait waits for the batch's replies and returns them in the order of its calls, or the
// error of its first pipeline (in lane order, whatever the timing) that failed: the
// store's error rather than errStopped when one of its own pipelines met it.
func (p *Pending) Wait() ([][]int64, error) {
	for _, d := range p.done {
		<-d
	}
	var stopped error
	for _, err := range p.errs {
		switch {
		case errors.Is(err, errStopped):
			stopped = err
		case err != nil:
			return nil, err
		}
	}
	if stopped != nil {
		return nil, stopped
	}
	return p.out, nil
}

// Send puts calls on their way and returns at once (on a store that is not a Batcher, once
// they are decided). calls must not change until Wait returns.
func (s *Stream) Send(calls []Call) *Pending {
	b, ok := s.st.(Batcher)
	switch {
	case !ok:
		out, err := EvalBatch(s.st, calls)
		return &Pending{out: out, errs: []error{err}}
	case s.real != nil:
		return s.sendLanes(calls)
	}
	p := &Pending{done: []chan struct{}{make(chan struct{})}, errs: make([]error, 1)}
	prev := s.tail
	s.tail = p.done[0]
	go func() {
		defer close(p.done[0])
		if prev != nil {
			<-prev
		}
		if s.stop.Load() {
			p.errs[0] = errStopped
			return
		}
		if p.out, p.errs[0] = b.EvalBatch(calls); p.errs[0] != nil {
			s.stop.Store(true)
		}
	}()
	return p
}

// sendLanes sends calls to a real server, split by client over the stream's lanes. Each
// call's store clock is set here, in call order, as one pipeline sets it (the latest
// instant of the calls up to it), and any script new to the face is loaded before the
// lanes set off.
func (s *Stream) sendLanes(calls []Call) *Pending {
	r := s.real
	clock := r.pipeClock()
	clocks := make([]int64, len(calls))
	for i, c := range calls {
		clock = max(clock, c.Now)
		clocks[i] = clock
	}
	r.SetNow(clock)
	lanes, after := s.split(calls)
	p := &Pending{out: make([][]int64, len(calls)), errs: make([]error, len(lanes))}
	s.sent.Lock()
	for _, c := range calls {
		if !slices.Contains(s.sent.scripts, c.Script) {
			s.sent.scripts = append(s.sent.scripts, c.Script)
		}
	}
	s.sent.Unlock()
	if r.missingScripts(calls) {
		s.loading.Lock()
		err := r.loadScripts(calls, false)
		s.loading.Unlock()
		if err != nil {
			s.stop.Store(true)
			p.errs = []error{err}
			return p
		}
	}
	r.pipelines.Add(1) // the lanes' pipelines travel side by side: one round trip
	if len(lanes) > 1 {
		r.split.Add(1)
	}
	for l, idx := range lanes {
		done := make(chan struct{})
		p.done = append(p.done, done)
		if len(after[l]) == 1 {
			ln := s.lanes[after[l][0]]
			prev := [3]chan struct{}{ln.written, ln.read, ln.done}
			written, read := make(chan struct{}), make(chan struct{})
			ln.written, ln.read, ln.done = written, read, done
			lp := &lanePipe{calls: calls, clocks: clocks, idx: idx, out: p.out}
			go func() {
				defer close(done)
				if p.errs[l] = s.laneTurns(ln, lp, prev, written, read); p.errs[l] != nil {
					s.stop.Store(true)
				}
			}()
			continue
		}
		// A pipeline of several lanes goes once each of them is done, on a wire of its own.
		var prev []chan struct{}
		for _, t := range after[l] {
			ln := s.lanes[t]
			if ln.done != nil {
				prev = append(prev, ln.done)
			}
			ln.written, ln.read, ln.done = done, done, done
		}
		go func() {
			defer close(done)
			for _, c := range prev {
				<-c
			}
			if s.stop.Load() {
				p.errs[l] = errStopped
				return
			}
			if p.errs[l] = s.sendLane(calls, clocks, idx, p.out, false); p.errs[l] != nil {
				s.stop.Store(true)
			}
		}()
	}
	return p
}

// laneTurns takes p's three turns on lane ln, each after prev's (the lane's pipeline
// before p; nil: none), closing written and read as it ends the first two.
func (s *Stream) laneTurns(ln *streamLane, p *lanePipe, prev [3]chan struct{}, written, read chan struct{}) error {
	wait := func(c chan struct{}) {
		if c != nil {
			<-c
		}
	}
	failed := func(e error) error {
		if e != nil {
			s.stop.Store(true) // before the next turn of any pipeline
		}
		return e
	}
	wait(prev[0])
	err := failed(s.write(ln, p))
	close(written)
	wait(prev[1])
	if err == nil && p.w != nil {
		err = failed(s.read(ln, p))
	}
	close(read)
	wait(prev[2])
	if err == nil && len(p.rest) > 0 {
		err = errStopped
		if !s.stop.Load() {
			err = failed(s.sendAgain(p))
		}
	}
	ln.mu.Lock()
	if ln.writes == p.seq { // no pipeline was written behind p's calls sent again
		ln.lost = false
	}
	ln.mu.Unlock()
	return err
}

// write is p's first turn: its calls written on the lane's wire (dialled if the lane has
// none), within the face's timeout, holding Stream.loading for reading until read
// releases it. On a lost lane p is not written, its calls left for its last turn.
func (s *Stream) write(ln *streamLane, p *lanePipe) error {
	if s.stop.Load() {
		return errStopped
	}
	r := s.real
	s.loading.RLock()
	ln.mu.Lock()
	ln.writes++
	p.seq = ln.writes
	switch {
	case ln.lost:
		ln.mu.Unlock()
		s.loading.RUnlock()
		p.rest = p.idx
		return nil
	case ln.broken != 0 || s.stop.Load(): // a failure since the check above
		ln.mu.Unlock()
		s.loading.RUnlock()
		return errStopped
	case ln.w == nil:
		w, err := r.getWire()
		if err != nil {
			ln.mu.Unlock()
			s.loading.RUnlock()
			return err
		}
		ln.w = w
	}
	ln.onWire++
	p.w, p.reloads = ln.w, s.reloads
	ln.mu.Unlock()
	p.end = r.watch.Begin()
	r.writeCalls(p.w, p.calls, p.clocks, p.idx)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	release := boundHalf(ctx, p.w.conn.SetWriteDeadline)
	err := p.w.flush()
	release()
	cancel()
	if err == nil {
		return nil
	}
	ln.mu.Lock()
	earlier := ln.broken != 0 && ln.broken < p.seq // the wire had failed already
	if !earlier {
		ln.broken = p.seq
	}
	s.stop.Store(true) // before the wire can go: no pipeline is written on a new one
	s.offWire(ln)
	ln.mu.Unlock()
	p.w = nil
	p.end()
	s.loading.RUnlock()
	if earlier {
		return errStopped
	}
	return r.wrap(fmt.Errorf("pipeline of %d script calls: %w", len(p.idx), err))
}

// read is p's second turn: its replies read from the wire, within the face's timeout
// from the moment the replies before them are read. A NOSCRIPT marks the lane lost and
// leaves p's calls from it on for its last turn; a call that ran on a lost lane, or after
// a NOSCRIPT of its own pipeline, is out of order.
func (s *Stream) read(ln *streamLane, p *lanePipe) (err error) {
	r := s.real
	defer s.loading.RUnlock()
	defer p.end()
	ln.mu.Lock()
	lost, broken := ln.lost, ln.broken != 0 && ln.broken < p.seq
	ln.mu.Unlock()
	defer func() {
		ln.mu.Lock()
		s.offWire(ln)
		ln.mu.Unlock()
	}()
	if broken {
		return errStopped
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	release := boundHalf(ctx, p.w.conn.SetReadDeadline)
	n, failure, ranAfter, ioErr := r.readReplies(p.w, p.calls, p.idx, p.out)
	release()
	cancel()
	if ioErr != nil {
		ln.mu.Lock()
		if ln.broken == 0 || ln.broken > p.seq {
			ln.broken = p.seq
		}
		s.stop.Store(true) // before the wire can go: no pipeline is written on a new one
		ln.mu.Unlock()
		p.w.conn.Close() // the pipelines behind p fail at once rather than each wait
		return r.wrap(fmt.Errorf("pipeline of %d script calls: %w", len(p.idx), ioErr))
	}
	if lost && (n > 0 || !isNoScript(failure) || ranAfter) {
		return errOutOfOrder(p.calls[p.idx[0]])
	}
	err = r.replyOutcome(p.calls, p.idx, n, failure, ranAfter)
	if errors.Is(err, errNoScript) {
		ln.mu.Lock()
		ln.lost = true
		ln.mu.Unlock()
		p.rest, p.noScript = p.idx[n:], true
		return nil
	}
	return err
}

// offWire counts a pipeline off the lane's wire (ln.mu held); the last one gives the
// wire back to the face, or closes it if it failed.
func (s *Stream) offWire(ln *streamLane) {
	if ln.onWire--; ln.onWire > 0 {
		return
	}
	if ln.broken != 0 {
		ln.w.conn.Close()
	} else {
		s.real.putWire(ln.w)
	}
	ln.w, ln.broken = nil, 0
}

// sendAgain is p's last turn on a lost lane: its calls that met NOSCRIPT, or that were
// never written, sent on a wire of their own and their replies awaited, the scripts
// loaded again first after a NOSCRIPT unless another lane has loaded them since.
func (s *Stream) sendAgain(p *lanePipe) error {
	reloaded := false
	if p.noScript {
		var err error
		if reloaded, err = s.reload(p.reloads); err != nil {
			return err
		}
	}
	return s.sendLane(p.calls, p.clocks, p.rest, p.out, reloaded)
}

// reload loads every script the stream has sent again, once no pipeline is on its way,
// unless the stream has done so since it had reloaded them seen times (seen < 0: in any
// case); it reports whether it did.
func (s *Stream) reload(seen int64) (bool, error) {
	s.loading.Lock()
	defer s.loading.Unlock()
	if seen >= 0 && s.reloads != seen {
		return false, nil
	}
	s.reloads++
	s.real.reloads.Add(1)
	s.sent.Lock()
	scripts := slices.Clone(s.sent.scripts)
	s.sent.Unlock()
	return true, s.real.scriptLoad(scripts)
}

// split is the pipelines a batch goes in: the indexes of each one's calls, in order, and
// the stream lanes each must follow. A batch is split by laneOf over every lane of the
// stream, its empty lanes left out; on several lanes, one too small to split, or with a
// call of no client, is one pipeline that follows every lane.
func (s *Stream) split(calls []Call) (pipelines [][]int, after [][]int) {
	n := len(s.lanes)
	whole := len(calls) < 2*minLaneCalls || slices.ContainsFunc(calls, func(c Call) bool { return c.Client == "" })
	if n == 1 || whole {
		all := make([]int, len(calls))
		every := make([]int, n)
		for i := range all {
			all[i] = i
		}
		for l := range every {
			every[l] = l
		}
		return [][]int{all}, [][]int{every}
	}
	for l, lane := range byLane(calls, n) {
		if len(lane) > 0 {
			pipelines = append(pipelines, lane)
			after = append(after, []int{l})
		}
	}
	return pipelines, after
}

// sendLane sends the calls of lane as one pipeline (wirePipeline) on a wire of its own and
// fills their replies in out. A server that has lost its scripts answers NOSCRIPT from
// some call on, none of them run: the scripts are loaded again (every one the stream has
// sent, once no other pipeline is on its way) and the rest sent, its order kept (the other
// lanes hold other clients' calls). reloaded says the scripts were loaded again just before.
func (s *Stream) sendLane(calls []Call, clocks []int64, lane []int, out [][]int64, reloaded bool) error {
	r := s.real
	for {
		s.loading.RLock()
		n, err := r.wirePipeline(calls, clocks, lane, out)
		s.loading.RUnlock()
		lane = lane[n:]
		if !errors.Is(err, errNoScript) {
			return err
		}
		if n == 0 && reloaded {
			return fmt.Errorf("script %s: the server keeps losing its scripts: %w", calls[lane[0]].Script.Name, err)
		}
		if reloaded, err = s.reload(-1); err != nil {
			return err
		}
	}
}
