package traffic

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/sim"
)

// never is the next time of a spawner that has nothing more to emit.
const never = time.Duration(math.MaxInt64)

// spawner is one stream inside a generator: an actor or a Poisson process that, at its next
// time, emits one or more requests (at that time or later) into the generator's queue.
type spawner interface {
	next() time.Duration
	spawn(q *requestQueue)
}

// multiSource merges spawners into one Source in time order. A spawn may emit requests
// in its future (a page load's fan-out, a mistyped login's retry); they wait in a queue,
// and a queued request is released only once no spawner could still emit an earlier one.
// Spawners sit in a queue by their next time, so a generator of many actors costs
// O(log actors) per request.
type multiSource struct {
	spawners []spawner
	queue    requestQueue
	label    string

	// order holds every spawner at its next time. They carry no sequence number: among
	// spawners due at the same instant the heap's shape decides, as it always has, so a
	// generator's requests stay what they were.
	order   sim.Queue[spawner]
	started bool
}

func (m *multiSource) Next(r *Request) bool {
	if !m.started {
		m.started = true
		for _, s := range m.spawners {
			m.order.Append(sim.Item[spawner]{At: s.next(), Value: s})
		}
		m.order.Init()
	}
	for {
		bestAt := never
		if m.order.Len() > 0 {
			bestAt = m.order.Min().At
		}
		if m.queue.Len() > 0 && m.queue.minAt() <= bestAt {
			m.queue.pop(r)
			return true
		}
		if bestAt == never {
			return false
		}
		top := m.order.Min()
		top.Value.spawn(&m.queue)
		top.At = top.Value.next()
		m.order.FixMin()
	}
}

func (m *multiSource) String() string { return m.label }

// requestQueue holds requests waiting for their time. The heap orders small slot
// indexes by (time, seq) rather than whole requests, so sifting moves no pointers; seq
// keeps same-instant requests in emission order so runs are deterministic.
type requestQueue struct {
	slots []Request
	free  []int32
	refs  sim.Queue[int32] // indexes into slots
	seq   uint64
}

func (q *requestQueue) push(r Request) {
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.slots[slot] = r
	} else {
		slot = int32(len(q.slots))
		q.slots = append(q.slots, r)
	}
	q.seq++
	q.refs.Push(sim.Item[int32]{At: r.At, Seq: q.seq, Value: slot})
}

func (q *requestQueue) Len() int { return q.refs.Len() }

func (q *requestQueue) minAt() time.Duration { return q.refs.Min().At }

func (q *requestQueue) pop(r *Request) {
	slot := q.refs.Pop().Value
	*r = q.slots[slot]
	q.slots[slot] = Request{}
	q.free = append(q.free, slot)
}

// poissonSpawner emits one request per arrival of a Poisson process of rate per second
// over [start, end); emit builds the request at t.
type poissonSpawner struct {
	rng   *rand.Rand
	rate  float64
	t     time.Duration
	end   time.Duration
	emit  func(t time.Duration, q *requestQueue)
	ready bool
}

func newPoissonSpawner(rng *rand.Rand, rate float64, start, end time.Duration, emit func(time.Duration, *requestQueue)) *poissonSpawner {
	return &poissonSpawner{rng: rng, rate: rate, t: start, end: end, emit: emit}
}

func (p *poissonSpawner) next() time.Duration {
	if !p.ready {
		p.ready = true
		if p.rate <= 0 {
			p.t = never
		} else {
			p.t += expGap(p.rng, p.rate)
		}
		if p.t >= p.end {
			p.t = never
		}
	}
	return p.t
}

func (p *poissonSpawner) spawn(q *requestQueue) {
	p.emit(p.t, q)
	p.ready = false
}

// expGap draws the gap to the next arrival of a Poisson process of rate per second.
func expGap(rng *rand.Rand, rate float64) time.Duration {
	return time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
}

// expMean draws an exponential duration of the given mean.
func expMean(rng *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(rng.ExpFloat64() * float64(mean))
}

// AddrPool builds Count addresses from Base, consecutive ones Spacing bits of prefix
// apart: spacing 32 for IPv4 (or 128 for IPv6) gives consecutive addresses, spacing 64 on
// IPv6 puts each address in its own /64 as an ISP hands them out.
func AddrPool(base netip.Addr, count, spacing int) []netip.Addr {
	out := make([]netip.Addr, count)
	shift := base.BitLen() - spacing
	for i := range out {
		out[i] = addShifted(base, uint64(i), shift)
	}
	return out
}

// addShifted returns a + n<<shift, wrapping within the address family.
func addShifted(a netip.Addr, n uint64, shift int) netip.Addr {
	if a.Is4() {
		b := a.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		v += uint32(n << shift)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	b := a.As16()
	hi := beUint64(b[:8])
	lo := beUint64(b[8:])
	var addHi, addLo uint64
	switch {
	case shift >= 64:
		addHi = n << (shift - 64)
	case shift == 0:
		addLo = n
	default:
		addLo = n << shift
		addHi = n >> (64 - shift)
	}
	lo2 := lo + addLo
	if lo2 < lo {
		addHi++
	}
	hi += addHi
	putBeUint64(b[:8], hi)
	putBeUint64(b[8:], lo2)
	return netip.AddrFrom16(b)
}

// RandomIn returns a uniformly random address inside p.
func RandomIn(p netip.Prefix, rng *rand.Rand) netip.Addr {
	base := p.Masked().Addr()
	host := base.BitLen() - p.Bits()
	if base.Is4() {
		if host == 0 {
			return base
		}
		return addShifted(base, rng.Uint64()&(1<<host-1), 0)
	}
	b := base.As16()
	hi, lo := beUint64(b[:8]), beUint64(b[8:])
	switch {
	case host == 0:
	case host <= 64:
		lo |= rng.Uint64() & (1<<host - 1)
		if host == 64 {
			lo = rng.Uint64()
		}
	default:
		lo = rng.Uint64()
		hi |= rng.Uint64() & (1<<(host-64) - 1)
	}
	putBeUint64(b[:8], hi)
	putBeUint64(b[8:], lo)
	return netip.AddrFrom16(b)
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, x := range b[:8] {
		v = v<<8 | uint64(x)
	}
	return v
}

func putBeUint64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// names precomputes prefix0 … prefix(n−1) so that generators do not allocate per request.
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}
