package store

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// Call is one script call of a batch: the script, its keys and arguments, and the store's
// virtual time it is made at (Now, ns since the Unix epoch), which faces move their clock
// to before running it, as SetNow would.
type Call struct {
	Script *Script
	Keys   []string
	Args   []int64
	Now    int64
	// Client is the client key the call decides for: the calls of different clients touch
	// different store keys, so a face may run them on different connections at once, in
	// order per client. Empty keeps the call in order with every other empty one.
	Client string
}

// Batcher is a face that decides a batch of script calls in one round trip.
type Batcher interface {
	// EvalBatch runs calls in order and returns their replies in order: the same replies,
	// and the same stored state afterwards, as SetNow(c.Now) then Eval for each call in
	// turn. On an error no reply is returned; calls before the failing one may have run.
	EvalBatch(calls []Call) ([][]int64, error)
}

// EvalBatch decides calls in order on st: in one round trip when st is a Batcher, else
// one call at a time. The replies are those of calling them one by one.
func EvalBatch(st Store, calls []Call) ([][]int64, error) {
	if b, ok := st.(Batcher); ok {
		return b.EvalBatch(calls)
	}
	out := make([][]int64, len(calls))
	for i, c := range calls {
		if err := st.SetNow(c.Now); err != nil {
			return nil, err
		}
		v, err := st.Eval(c.Script, c.Keys, c.Args...)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Call is the script call Allow would make for a request of cost for key at at, for a
// batch; ReplyOf reads its reply. By the node's clock the script is given at.Node; by the
// store's it is asked to read the store's clock, and the keys are named by at.Store.
func (l *Limiter) Call(key string, at At, cost int64) Call {
	args := l.args
	named := at.Node
	args[argNow] = floorDiv(at.Node, 1000)
	args[argSub] = at.Node - args[argNow]*1000
	if l.clock == StoreClock {
		named, args[argNow], args[argSub] = at.Store, storeTime, 0 // the face sends the store's
	}
	args[argCost] = max(cost, 1)
	keys, client := l.keys(key, named)
	return Call{Script: l.script, Keys: keys, Args: args[:], Now: at.Store, Client: client}
}

// ReplyOf is the decision in a script's reply, as Limiter.Allow reads it.
func ReplyOf(s *Script, v []int64) (Reply, error) {
	want := decisionInts
	if s.Name == LeaseScript.Name {
		want = leaseInts
	}
	if len(v) != want {
		return Reply{}, fmt.Errorf("script %s: want %d integers, got %d", s.Name, want, len(v))
	}
	if want == leaseInts {
		return Reply{Allowed: v[0] > 0, Granted: v[0], Remaining: v[1], Reset: time.Duration(v[2]) * time.Microsecond}, nil
	}
	return replyOf(v), nil
}

// clockCommand is the command the embedded miniredis registers to move its clock inside a
// pipeline, in order with the scripts around it: the virtual time in ns as its argument.
// A real server has no such command; its clock is its own.
const clockCommand = "RLSIM.CLOCK"

// ScriptCalls is how many script calls this face has sent, one by one or in batches;
// Pipelines is how many batches (round trips) carried them in EvalBatch: a batch split
// over lanes is one round trip, its pipelines travelling side by side.
func (r *Redis) ScriptCalls() int64 { return r.calls.Load() }

// Pipelines is how many round trips EvalBatch has made.
func (r *Redis) Pipelines() int64 { return r.pipelines.Load() }

// RoundTrips is how many round trips the face has made for decisions: one per pipeline,
// per script call sent on its own, per INCRBY and per PEXPIRE.
func (r *Redis) RoundTrips() int64 { return r.pipelines.Load() + r.singles.Load() }

// EvalBatch sends calls as one pipeline of EVALSHA commands (Redis runs them in order, each
// atomically, so the replies are those of sending them one by one). Each script is loaded
// with SCRIPT LOAD the first time this face batches it: on miniredis in the same pipeline,
// ahead of the calls; on a real server in a round trip of its own, before the pipelines
// set off on their wires (wire.go). If the server has lost its scripts all the same (a restart, SCRIPT FLUSH)
// the calls from the first NOSCRIPT on failed without running; they are sent again after
// loading the scripts, so the order holds. On miniredis each call is preceded by the
// clock command whenever its time moves on, so TTLs count down exactly as they would one
// call at a time.
//
// Calls of different clients commute, so when the face has several lanes (connections;
// see SetLanes) the batch is split by client, each client's calls kept in order, and the
// lanes' pipelines are sent at once: the server works through one while the client
// writes the next and reads the last. The replies are those of one pipeline. On miniredis
// a batch goes on lanes only when all its calls are at one instant, since its one clock
// has to move between calls made at different times.
func (r *Redis) EvalBatch(calls []Call) ([][]int64, error) {
	lanes := r.lanesFor(calls)
	if r.mini == nil && len(lanes) <= 1 && len(calls) > 0 {
		lanes = [][]int{make([]int, len(calls))} // a real server's one pipeline goes on a wire too
		for i := range calls {
			lanes[0][i] = i
		}
	}
	if len(lanes) > 0 {
		return r.evalLanes(calls, lanes)
	}
	out := make([][]int64, len(calls))
	for done := 0; done < len(calls); {
		n, err := r.evalPipeline(calls[done:], out[done:])
		done += n
		if err == nil {
			continue
		}
		if !errors.Is(err, errNoScript) {
			return nil, err
		}
		if n == 0 && r.reloaded {
			return nil, fmt.Errorf("script %s: the server keeps losing its scripts: %w", calls[done].Script.Name, err)
		}
		// Forget what was loaded: the next pipeline loads its scripts again.
		clear(r.loaded)
		r.reloads.Add(1)
		r.reloaded = n == 0
	}
	r.reloaded = false
	return out, nil
}

// errNoScript marks a pipeline cut short by NOSCRIPT, to be sent again from there.
var errNoScript = errors.New("NOSCRIPT")

// evalPipeline sends calls to miniredis as one pipeline and fills out; it returns how many
// leading calls have their reply. A NOSCRIPT reply stops it there (errNoScript) provided
// every later call failed the same way, so none of them ran out of order.
func (r *Redis) evalPipeline(calls []Call, out [][]int64) (int, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	pipe := r.client.Pipeline()
	if r.loaded == nil {
		r.loaded = map[*Script]bool{}
	}
	// Load every script of the batch when one of them is new to this face, so a server
	// that lost its scripts (a flush) gets them all back before any call runs; an embedded
	// server gets them in every pipeline (it costs nothing there), because a call sent
	// again after NOSCRIPT would find its clock already moved on by the clock commands of
	// the calls after it.
	var distinct []*Script
	missing := r.loadEvery
	for _, c := range calls {
		if !slices.Contains(distinct, c.Script) {
			distinct = append(distinct, c.Script)
			missing = missing || !r.loaded[c.Script]
		}
	}
	var loads []*redis.StringCmd
	if missing {
		for _, s := range distinct {
			r.loaded[s] = true
			loads = append(loads, pipe.ScriptLoad(ctx, s.Source))
		}
	}
	cmds := make([]*redis.Cmd, len(calls))
	clock := r.pipeClock()
	for i, c := range calls {
		if c.Now > clock {
			clock = c.Now
			if r.mini != nil {
				pipe.Do(ctx, clockCommand, strconv.FormatInt(c.Now, 10))
			}
		}
		cmds[i] = pipe.EvalSha(ctx, c.Script.lua.Hash(), c.Keys, r.argv(c.Args, clock)...)
	}
	r.pipelines.Add(1)
	if _, err := pipe.Exec(ctx); err != nil && !isReplyError(err) {
		clear(r.loaded)
		return 0, r.wrap(fmt.Errorf("pipeline of %d script calls: %w", len(calls), err))
	}
	for _, l := range loads {
		if err := l.Err(); err != nil {
			clear(r.loaded)
			return 0, r.wrap(fmt.Errorf("SCRIPT LOAD: %w", err))
		}
	}
	for i, cmd := range cmds {
		v, err := cmd.Int64Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			for _, later := range cmds[i+1:] {
				if !redis.HasErrorPrefix(later.Err(), "NOSCRIPT") {
					return i, errOutOfOrder(calls[i])
				}
			}
			return i, errNoScript
		}
		if err != nil {
			return i, r.wrap(fmt.Errorf("script %s: %w", calls[i].Script.Name, err))
		}
		out[i] = v
		r.calls.Add(1)
	}
	return len(calls), nil
}

// isReplyError reports whether err is a Redis error reply (a command that failed) rather
// than a failure of the connection: the pipeline's other replies are then still good.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.ErrClosed)
}

// pipeClock is the virtual time the embedded server's clock is at (ns).
func (r *Redis) pipeClock() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// registerClock adds clockCommand to an embedded miniredis.
func (r *Redis) registerClock() error {
	return r.mini.Server().Register(clockCommand, func(c *server.Peer, _ string, args []string) {
		if len(args) != 1 {
			c.WriteError("ERR wrong number of arguments for '" + clockCommand + "'")
			return
		}
		now, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			c.WriteError("ERR " + clockCommand + ": the time must be an integer (ns)")
			return
		}
		r.advance(now)
		c.WriteOK()
	})
}

// DefaultLanes is how many connections a face on a real server sends a batch's pipelines
// on at once.
const DefaultLanes = 4

// SetLanes sets how many connections the face may split a batch over (at least 1; one
// sends every batch as one pipeline). On a real server each lane's pipeline goes on a wire
// of its own, dialled the first time so many pipelines are on their way at once.
func (r *Redis) SetLanes(n int) { r.lanes = max(n, 1) }

// poolSize is the connections the face's client may hold: for single calls, script loads,
// key scans and user scripts (a real server's lanes are on wires of their own).
const poolSize = DefaultLanes + 1

// minLaneCalls is the fewest calls worth a lane of their own: below it, a goroutine and a
// round trip cost more than the pipelines' overlap saves.
const minLaneCalls = 16

// lanesFor splits calls by client into the face's lanes, the calls of each lane in order:
// the indexes in calls of each lane's calls, the empty lanes left out. It returns one lane
// when the batch is too small, when a call names no client, or when the clock of an
// embedded server would have to move between calls.
func (r *Redis) lanesFor(calls []Call) [][]int {
	n := min(r.lanes, len(calls)/minLaneCalls)
	if n <= 1 {
		return nil
	}
	for _, c := range calls {
		if c.Client == "" || (r.mini != nil && c.Now != calls[0].Now) {
			return nil
		}
	}
	return slices.DeleteFunc(byLane(calls, n), func(lane []int) bool { return len(lane) == 0 })
}

// byLane is the indexes in calls of the calls on each of n lanes (laneOf of their
// client), in order; a lane no call goes to is empty.
func byLane(calls []Call, n int) [][]int {
	lanes := make([][]int, n)
	for i, c := range calls {
		l := laneOf(c.Client, n)
		lanes[l] = append(lanes[l], i)
	}
	return lanes
}

// laneOf spreads clients over n lanes (FNV-1a of the client key).
func laneOf(client string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(client); i++ {
		h = (h ^ uint32(client[i])) * 16777619
	}
	return int(h % uint32(n))
}

// evalLanes sends the lanes' calls as one pipeline per lane, all at once, and returns the
// replies in the order of calls. The arguments are made in call order first, as one
// pipeline makes them (the store's clock a call is sent is the latest of the calls up to
// it), and any script new to the face is loaded before the lanes set off. A server that
// has lost its scripts answers NOSCRIPT from some call of a lane on; the scripts are
// loaded again once every lane's pipeline is back, never while one is on its way (a
// lane's later calls would run before its earlier ones), and the lanes send the rest.
func (r *Redis) evalLanes(calls []Call, lanes [][]int) ([][]int64, error) {
	clock := r.pipeClock()
	if r.mini != nil {
		r.advance(calls[0].Now) // every call is at this instant (lanesFor)
	}
	clocks := make([]int64, len(calls))
	for i, c := range calls {
		clock = max(clock, c.Now)
		clocks[i] = clock
	}
	var argvs [][]any // miniredis's, made here: argv's texts are not for several goroutines
	if r.mini != nil {
		argvs = make([][]any, len(calls))
		for i, c := range calls {
			argvs[i] = r.argv(c.Args, clocks[i])
		}
	}
	if err := r.loadScripts(calls, r.loadEvery); err != nil {
		return nil, err
	}
	if len(lanes) > 1 {
		r.split.Add(1)
	}
	out := make([][]int64, len(calls))
	done := make([]int, len(lanes))
	errs := make([]error, len(lanes))
	for reloaded := false; ; {
		r.pipelines.Add(1) // the lanes' pipelines travel side by side: one round trip
		var wg sync.WaitGroup
		for l, lane := range lanes {
			if len(lane) > 0 {
				wg.Go(func() { done[l], errs[l] = r.lanePipeline(calls, clocks, argvs, lane, out) })
			}
		}
		wg.Wait()
		lost, progress := -1, false
		var rest []Call
		for l := range lanes {
			progress = progress || done[l] > 0
			lanes[l] = lanes[l][done[l]:]
			done[l] = 0
			switch err := errs[l]; {
			case err == nil:
			case !errors.Is(err, errNoScript):
				return nil, err // the first lane's error, whatever the timing
			default:
				if lost < 0 {
					lost = l
				}
				for _, i := range lanes[l] {
					rest = append(rest, calls[i])
				}
			}
			errs[l] = nil
		}
		if lost < 0 {
			break
		}
		if !progress && reloaded {
			return nil, fmt.Errorf("script %s: the server keeps losing its scripts: %w", calls[lanes[lost][0]].Script.Name, errNoScript)
		}
		reloaded = true
		r.reloads.Add(1)
		// A server that lost one script lost them all (a restart, a flush): forget every
		// one, so the next batch loads its own again before its calls run.
		clear(r.loaded)
		if err := r.loadScripts(rest, true); err != nil {
			return nil, err
		}
	}
	if r.mini == nil {
		r.SetNow(clock)
	}
	return out, nil
}

// missingScripts reports whether calls use a script this face has not loaded yet.
func (r *Redis) missingScripts(calls []Call) bool {
	for _, c := range calls {
		if !r.loaded[c.Script] {
			return true
		}
	}
	return false
}

// loadScripts loads, in one round trip, the scripts of calls this face has not loaded
// yet (all of them when every is set).
func (r *Redis) loadScripts(calls []Call, every bool) error {
	if r.loaded == nil {
		r.loaded = map[*Script]bool{}
	}
	var missing []*Script
	for _, c := range calls {
		if (every || !r.loaded[c.Script]) && !slices.Contains(missing, c.Script) {
			missing = append(missing, c.Script)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := r.scriptLoad(missing); err != nil {
		clear(r.loaded)
		return err
	}
	for _, s := range missing {
		r.loaded[s] = true
	}
	return nil
}

// scriptLoad loads scripts on the server in one round trip.
func (r *Redis) scriptLoad(scripts []*Script) error {
	ctx, cancel := r.ctx()
	defer cancel()
	pipe := r.client.Pipeline()
	for _, s := range scripts {
		pipe.ScriptLoad(ctx, s.Source)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return r.wrap(fmt.Errorf("SCRIPT LOAD: %w", err))
	}
	return nil
}

// lanePipeline sends the calls of lane as one pipeline of EVALSHA and returns how many
// leading calls have their reply (see evalPipeline). On a real server the pipeline goes on
// a wire of its own, each call's arguments made there for clocks[i], the store's clock
// when it is sent; on miniredis through the client, with the arguments argvs[i].
func (r *Redis) lanePipeline(calls []Call, clocks []int64, argvs [][]any, lane []int, out [][]int64) (int, error) {
	if r.mini == nil {
		return r.wirePipeline(calls, clocks, lane, out)
	}
	ctx, cancel := r.ctx()
	defer cancel()
	pipe := r.client.Pipeline()
	cmds := make([]*redis.Cmd, len(lane))
	for j, i := range lane {
		cmds[j] = pipe.EvalSha(ctx, calls[i].Script.lua.Hash(), calls[i].Keys, argvs[i]...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isReplyError(err) {
		return 0, r.wrap(fmt.Errorf("pipeline of %d script calls: %w", len(lane), err))
	}
	for j, cmd := range cmds {
		v, err := cmd.Int64Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			for _, later := range cmds[j+1:] {
				if !redis.HasErrorPrefix(later.Err(), "NOSCRIPT") {
					return j, errOutOfOrder(calls[lane[j]])
				}
			}
			return j, errNoScript
		}
		if err != nil {
			return j, r.wrap(fmt.Errorf("script %s: %w", calls[lane[j]].Script.Name, err))
		}
		out[lane[j]] = v
		r.calls.Add(1)
	}
	return len(lane), nil
}

// errOutOfOrder is the error of a pipeline whose call c met NOSCRIPT while a later call
// of the same pipeline ran.
func errOutOfOrder(c Call) error {
	return fmt.Errorf("script %s: the server lost its scripts in the middle of a pipeline and later calls ran before this one; the decisions are out of order", c.Script.Name)
}

// isNoScript reports whether err is the server's NOSCRIPT error reply.
func isNoScript(err error) bool {
	var re replyError
	return errors.As(err, &re) && strings.HasPrefix(string(re), "NOSCRIPT")
}

// wirePipeline is lanePipeline on a real server: the calls written on a wire at once, the
// replies read into one slab. Every reply is read before the wire goes back, whatever
// they hold, so the next pipeline on it starts in step.
func (r *Redis) wirePipeline(calls []Call, clocks []int64, lane []int, out [][]int64) (int, error) {
	w, err := r.getWire()
	if err != nil {
		return 0, err
	}
	r.writeCalls(w, calls, clocks, lane)
	ctx, cancel := r.ctx()
	defer cancel()
	release := w.bound(ctx)
	lost := func(err error) (int, error) {
		release()
		w.conn.Close()
		return 0, r.wrap(fmt.Errorf("pipeline of %d script calls: %w", len(lane), err))
	}
	if err := w.flush(); err != nil {
		return lost(err)
	}
	n, failure, ranAfter, err := r.readReplies(w, calls, lane, out)
	if err != nil {
		return lost(err)
	}
	if release() {
		r.putWire(w)
	} else {
		w.conn.Close() // read in time, but its deadline is past now
	}
	return n, r.replyOutcome(calls, lane, n, failure, ranAfter)
}

// writeCalls appends the EVALSHA commands of the calls of lane to w's buffer, each with
// the arguments a real server is sent at clocks[i].
func (r *Redis) writeCalls(w *wire, calls []Call, clocks []int64, lane []int) {
	var args [16]int64
	for _, i := range lane {
		c := calls[i]
		w.buf = appendEvalSha(w.buf, c.Script.lua.Hash(), c.Keys, r.wireArgs(args[:0], c.Args, clocks[i]))
	}
}

// readReplies reads the replies of the calls of lane from w, in order, and fills out for
// the leading calls that have theirs: how many (n), the error reply of the first call that
// failed (failure; nil: none did) and whether any call after it ran (its reply was not
// NOSCRIPT). Every reply is read, whatever it holds; err is a failure of the connection
// (lost, stalled, out of step), after which the wire must go.
func (r *Redis) readReplies(w *wire, calls []Call, lane []int, out [][]int64) (n int, failure error, ranAfter bool, err error) {
	slab := make([]int64, 0, 4*len(lane))
	failed := -1
	for j, i := range lane {
		start := len(slab)
		var reply error
		if slab, reply = w.ints(slab); reply != nil && !errors.As(reply, new(replyError)) {
			return 0, nil, false, reply
		}
		switch {
		case failed >= 0:
			ranAfter = ranAfter || !isNoScript(reply)
		case reply != nil:
			failed, failure = j, reply
		default:
			out[i] = slab[start:len(slab):len(slab)]
		}
	}
	if failed < 0 {
		r.calls.Add(int64(len(lane)))
		return len(lane), nil, false, nil
	}
	r.calls.Add(int64(failed))
	return failed, failure, ranAfter, nil
}

// replyOutcome is the error of a pipeline of the calls of lane whose first n calls have
// their reply and whose call n failed with failure (nil: none failed): errNoScript when
// the server had lost its scripts from that call on (the calls to send again), an
// out-of-order error when a later call ran all the same, else the call's error.
func (r *Redis) replyOutcome(calls []Call, lane []int, n int, failure error, ranAfter bool) error {
	switch {
	case failure == nil:
		return nil
	case isNoScript(failure) && ranAfter:
		return errOutOfOrder(calls[lane[n]])
	case isNoScript(failure):
		return errNoScript
	}
	return r.wrap(fmt.Errorf("script %s: %w", calls[lane[n]].Script.Name, failure))
}

// counters of a face, kept apart from its fields in redis.go.
type faceCounters struct {
	calls, pipelines, reloads, singles atomic.Int64
	split                              atomic.Int64 // batches sent on more than one lane
}

// laneState is what the face keeps for its lanes, kept apart from its fields in redis.go.
type laneState struct {
	lanes int      // connections a batch may be split over; 0 or 1: one pipeline
	args  argTexts // the arguments sent lately, as sent
	wires wires    // a real server's lane connections, idle
}

// argTexts remembers the decimal text of the integers a face sent lately, ready to send
// again: a script's limit, window, burst, cost and keep repeat from call to call, and
// formatting them anew made two allocations per argument of every call of a pipeline.
type argTexts [64]struct {
	v    int64
	text any
}

// text returns v as the decimal string a command sends.
func (t *argTexts) text(v int64) any {
	e := &t[uint64(v)%uint64(len(t))]
	if e.text == nil || e.v != v {
		e.v, e.text = v, strconv.FormatInt(v, 10)
	}
	return e.text
}
