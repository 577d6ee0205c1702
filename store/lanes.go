package store

import (
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
// lanes, the same for every batch of the stream), and a lane's pipeline of a batch leaves
// as soon as the same lane's pipeline of the batch before is back, whatever the other
// lanes are doing: the server always has a lane's calls to run while the client writes or
// reads another's. A batch that cannot be split (too small, a call of no client) leaves
// when every lane is back. On another Batcher (miniredis) each batch leaves, whole, when
// the one before is back; any other store decides a batch at once, in Send.
//
// A Stream is used by one goroutine, and nothing else may use the store while a batch is
// on its way. After a batch fails, the lanes send nothing more: the batches after it fail
// with errStopped.
type Stream struct {
	st    Store
	real  *Redis          // a real server's face; nil: whole batches
	tails []chan struct{} // per lane (one off a real server): closed when its last pipeline is back
	stop  atomic.Bool     // a batch failed
	// loading is held for reading by every lane's pipeline on its way, and for writing
	// while scripts are loaded: a lane that met NOSCRIPT loads them again only when no
	// other pipeline is on its way, so none of those meets the scripts back in its middle
	// (its later calls would run before its failed ones).
	loading sync.RWMutex
	// sent is every script the stream has sent, which a lane that met NOSCRIPT loads
	// again, all of them: a lane that loaded only its own would leave another's pipeline
	// meeting a script back after one still missing.
	sent struct {
		sync.Mutex
		scripts []*Script
	}
}

// errStopped is the error of a batch sent after one that failed.
var errStopped = errors.New("not sent: an earlier batch of the stream failed")

// NewStream returns a stream of batches to st.
func NewStream(st Store) *Stream {
	s := &Stream{st: st, tails: make([]chan struct{}, 1)}
	if r, ok := st.(*Redis); ok && r.mini == nil {
		s.real = r
		s.tails = make([]chan struct{}, max(r.lanes, 1))
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
	prev := s.tails[0]
	s.tails[0] = p.done[0]
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
	for l, lane := range lanes {
		done := make(chan struct{})
		p.done = append(p.done, done)
		var prev []chan struct{}
		for _, t := range after[l] {
			if s.tails[t] != nil {
				prev = append(prev, s.tails[t])
			}
			s.tails[t] = done
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
			if p.errs[l] = s.sendLane(calls, clocks, lane, p.out); p.errs[l] != nil {
				s.stop.Store(true)
			}
		}()
	}
	return p
}

// split is the pipelines a batch goes in: the indexes of each one's calls, in order, and
// the stream lanes each must follow. A batch is split by laneOf over every lane of the
// stream, its empty lanes left out; one too small to split, or with a call of no client,
// is one pipeline that follows every lane.
func (s *Stream) split(calls []Call) (pipelines [][]int, after [][]int) {
	n := len(s.tails)
	whole := n == 1 || len(calls) < 2*minLaneCalls || slices.ContainsFunc(calls, func(c Call) bool { return c.Client == "" })
	if whole {
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

// sendLane sends the calls of lane as one pipeline (wirePipeline) and fills their replies
// in out. A server that has lost its scripts answers NOSCRIPT from some call on, none of
// them run: the lane loads every script the stream has sent again, once no other pipeline
// is on its way, and sends the rest, its order kept (the other lanes hold other clients' calls).
func (s *Stream) sendLane(calls []Call, clocks []int64, lane []int, out [][]int64) error {
	r := s.real
	for reloaded := false; ; {
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
		reloaded = true
		r.reloads.Add(1)
		s.sent.Lock()
		scripts := slices.Clone(s.sent.scripts)
		s.sent.Unlock()
		s.loading.Lock()
		err = r.scriptLoad(scripts)
		s.loading.Unlock()
		if err != nil {
			return err
		}
	}
}
