package run

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// A pass moves its traffic through three stages, in chunks of consecutive requests:
//
//	generate  the event loop pops the sources' requests in time order and numbers their
//	          keys: once for all the algorithms of the pass
//	decide    each group of limiters decides every request of a chunk through Admit (the
//	          decision alone; nothing reads what it would tell a client), one group per
//	          worker, the groups side by side
//	measure   the collectors, sharing one reference window per key (report.Group),
//	          measure the chunk's requests in order, and a decisions file gets its rows
//
// On one worker the stages take turns on the caller's goroutine; on more, each stage runs
// on a goroutine of its own and chunks flow between them, the measuring stage taking them
// in the order they were generated. A limiter decides its requests in time order and the
// collectors measure them in time order whatever the schedule, so the results do not
// depend on the number of workers.

// chunkSize is how many requests travel together between the stages: enough that handing
// a chunk on costs nothing per request, few enough that a chunk stays in cache.
const chunkSize = 2048

// chunksInFlight is how many chunks a pass keeps: the generator fills one while the
// others are decided and measured.
const chunksInFlight = 8

// chunk is a run of consecutive requests of a pass and what the limiters decided for them.
type chunk struct {
	n     int
	ids   []uint32
	at    []time.Duration
	cost  []int64
	class []traffic.Class
	names []string // key names, for a decisions file only
	// A replay's chunks say which requests could not be keyed, who sent each and its line.
	unkeyed []bool
	actors  []string
	lines   []int
	// admitted[g][i] has bit j set when limiter j of the pass admitted request i; each
	// decide group writes its own row, so no two goroutines write one word.
	admitted [][]uint64
	// delays[j][i] is the queueing delay limiter j added to request i, when it admitted it.
	delays  [][]time.Duration
	decided sync.WaitGroup // the decide groups still working on the chunk
}

func newChunk(limiters, groups int, names, replay bool) *chunk {
	c := &chunk{
		ids:      make([]uint32, chunkSize),
		at:       make([]time.Duration, chunkSize),
		cost:     make([]int64, chunkSize),
		class:    make([]traffic.Class, chunkSize),
		admitted: make([][]uint64, groups),
		delays:   make([][]time.Duration, limiters),
	}
	if names {
		c.names = make([]string, chunkSize)
	}
	if replay {
		c.unkeyed = make([]bool, chunkSize)
		c.actors = make([]string, chunkSize)
		c.lines = make([]int, chunkSize)
	}
	for g := range c.admitted {
		c.admitted[g] = make([]uint64, chunkSize)
	}
	for j := range c.delays {
		c.delays[j] = make([]time.Duration, chunkSize)
	}
	return c
}

// run walks the traffic on workers workers (0: GOMAXPROCS) and returns the bytes the
// pass's interned key names hold.
func (p *pass) run(workers int) (int64, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	groups := passGroups(len(p.lims), workers, false)
	if workers == 1 {
		p.takeTurns(groups)
		p.generate()
	} else {
		p.runStages(groups)
	}
	if p.stopErr != nil {
		return 0, p.stopErr
	}
	if p.writeErr != nil {
		return 0, fmt.Errorf("writing decisions: %w", p.writeErr)
	}
	if p.keys == nil { // a replay's pass numbers its keys itself
		return 0, nil
	}
	return p.keys.heldBytes(), nil
}

// generate runs the event loop to the horizon, or until the pass's context is done, and
// hands on the last, partly filled chunk.
func (p *pass) generate() {
	switch {
	case p.produce != nil:
		p.stopErr = p.produce()
	case p.ctx != nil:
		p.stopErr = p.loop.RunContext(p.ctx, p.horizon)
	default:
		p.loop.Run(p.horizon)
	}
	if p.fill.n > 0 {
		p.fill = p.handOff(p.fill)
	}
}

// takeTurns has the stages take turns on the caller's goroutine: each full chunk is
// decided and measured before the generator goes on.
func (p *pass) takeTurns(groups [][2]int) {
	p.fill = newChunk(len(p.lims), len(groups), p.keepNames(), p.replay)
	p.handOff = func(c *chunk) *chunk {
		for g, span := range groups {
			p.decide(c, g, span)
		}
		p.measure(c)
		c.n = 0
		return c
	}
}

// runStages runs the three stages on goroutines of their own: the generator on the
// caller's, one per decide group, and one that measures.
func (p *pass) runStages(groups [][2]int) {
	free := make(chan *chunk, chunksInFlight)
	for range chunksInFlight {
		free <- newChunk(len(p.lims), len(groups), p.keepNames(), p.replay)
	}
	toDecide := make([]chan *chunk, len(groups))
	toMeasure := make(chan *chunk, chunksInFlight)
	var wg sync.WaitGroup
	for g, span := range groups {
		toDecide[g] = make(chan *chunk, chunksInFlight)
		wg.Go(func() {
			for c := range toDecide[g] {
				p.decide(c, g, span)
				c.decided.Done()
			}
		})
	}
	wg.Go(func() {
		for c := range toMeasure {
			c.decided.Wait()
			p.measure(c)
			c.n = 0
			free <- c
		}
	})
	p.fill = <-free
	p.handOff = func(c *chunk) *chunk {
		c.decided.Add(len(groups))
		for _, ch := range toDecide {
			ch <- c
		}
		toMeasure <- c
		return <-free
	}
	p.generate()
	for _, ch := range toDecide {
		close(ch)
	}
	close(toMeasure)
	wg.Wait()
}

// decide has the limiters lims[span[0]:span[1]] of decide group g decide every request of
// c, each limiter the whole chunk in order.
func (p *pass) decide(c *chunk, g int, span [2]int) {
	admitted := c.admitted[g][:c.n]
	clear(admitted)
	for j := span[0]; j < span[1]; j++ {
		if a := p.ahead[j]; a != nil {
			p.decideAhead(a, c, admitted, uint64(1)<<j, c.delays[j][:c.n])
			continue
		}
		if p.touch != nil && p.touch[j] != nil {
			p.touch[j].Touch(c.ids[:c.n])
		}
		admit, bit, delays := p.admit[j], uint64(1)<<j, c.delays[j][:c.n]
		for i, id := range c.ids[:c.n] {
			if c.unkeyed != nil && c.unkeyed[i] {
				delays[i] = 0 // refused before any limiter
				continue
			}
			ok, delay := admit.Admit(id, p.epoch+int64(c.at[i]), c.cost[i])
			if ok {
				admitted[i] |= bit
			}
			delays[i] = delay
		}
	}
}

// decideAhead has a limiter written ahead of its answers (a user's) decide every request
// of c: the chunk's requests are sent up to Ahead at a time, and the answers read in
// order.
func (p *pass) decideAhead(a aheadLimiter, c *chunk, admitted []uint64, bit uint64, delays []time.Duration) {
	depth := max(a.Ahead(), 1)
	for from := 0; from < c.n; from += depth {
		to := min(from+depth, c.n)
		for i := from; i < to; i++ {
			if c.unkeyed != nil && c.unkeyed[i] {
				continue
			}
			a.SetName(c.ids[i], c.names[i])
			a.Send(c.ids[i], p.epoch+int64(c.at[i]), c.cost[i])
		}
		for i := from; i < to; i++ {
			if c.unkeyed != nil && c.unkeyed[i] {
				delays[i] = 0
				continue
			}
			if a.Receive().Allowed {
				admitted[i] |= bit
			}
			delays[i] = 0
		}
	}
}

// measure has the collectors measure every request of c in order.
func (p *pass) measure(c *chunk) {
	if p.replay {
		p.measureReplay(c)
		return
	}
	for i := range c.n {
		var admitted uint64
		for g := range c.admitted {
			admitted |= c.admitted[g][i]
		}
		for j := range p.delays {
			p.delays[j] = c.delays[j][i]
		}
		ref := p.group.Observe(c.ids[i], int64(c.at[i]), c.cost[i], c.class[i], admitted, p.delays)
		p.progress.count(c.at[i])
		if p.dec != nil && p.writeErr == nil {
			p.writeErr = p.dec.writeRow(p.name, p.lims[0].Name(), c.at[i], c.names[i], c.cost[i], admitted&1 != 0, ref&1 != 0)
		}
	}
}

// measureReplay is measure for a replay's chunk: an unkeyed request is refused for every
// limiter, a request that names who sent it counts for each limiter's harm, and each
// limiter's decisions go to its own writer.
func (p *pass) measureReplay(c *chunk) {
	p.group.Touch(c.ids[:c.n])
	for i := range c.n {
		var admitted, ref uint64
		if c.unkeyed[i] {
			for _, col := range p.group.Members() {
				col.ObserveUnkeyed(c.class[i])
			}
		} else {
			for g := range c.admitted {
				admitted |= c.admitted[g][i]
			}
			for j := range p.delays {
				p.delays[j] = c.delays[j][i]
			}
			if p.ordered {
				p.group.TimelineOrder(int64(c.lines[i]))
			}
			ref = p.group.Observe(c.ids[i], int64(c.at[i]), c.cost[i], c.class[i], admitted, p.delays)
		}
		p.progress.count(c.at[i])
		if a := c.actors[i]; a != "" {
			r := traffic.Request{At: c.at[i], Cost: c.cost[i], Class: c.class[i], Actor: a}
			for j, h := range p.harms {
				h.Observe(&r, admitted>>j&1 != 0)
			}
		}
		if p.decs != nil && p.writeErr == nil {
			name := c.names[i]
			if c.unkeyed[i] {
				name = "(unkeyed)"
			}
			for j, d := range p.decs {
				if p.writeErr = d.writeRow(p.name, p.lims[j].Name(), c.at[i], name, c.cost[i], admitted>>j&1 != 0, ref>>j&1 != 0); p.writeErr != nil {
					break
				}
			}
		}
	}
}

// passBytes is what a pass's chunks in flight hold, for limiters limiters: per request an
// id, a time, a cost and a class, each limiter's delay and admission word, and a replay's
// key name, actor and unkeyed mark.
func passBytes(limiters int, names bool) int64 {
	per := int64(4+8+8+1) + int64(limiters)*8 + 8*int64(len(passGroups(limiters, 0, false)))
	if names {
		per += 16
	}
	per += 16 + 1 // a replay's actor and unkeyed mark
	return chunksInFlight * chunkSize * per
}
