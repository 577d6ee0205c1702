package algorithms

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// NginxName is the kind of nginx's limit_req module on the command line.
const NginxName = "nginx"

func init() {
	Register(Kind{
		Name: NginxName, Rank: 200,
		Summary: "nginx limit_req: a leaky bucket in thousandths of a request on a millisecond clock; burst=N lets N+1 through at once",
		Params: []Param{
			{Name: "rate", Doc: "the zone's rate (limit_req_zone rate=): a whole number of requests per second (10r/s) or per minute (30r/m); required"},
			{Name: "burst", Doc: "how many requests beyond the rate a key may run ahead, a whole number from 1; default 0"},
			{Name: "nodelay", Flag: true, Doc: "pass the burst at once instead of delaying each excess request to the rate"},
			{Name: "delay", Doc: "two-stage limiting (nginx 1.15.7 and later): the first N excess requests pass at once, the rest of the burst is delayed; a whole number from 1"},
		},
		Configure: configureNginx,
		Stack:     stackNginx,
	})
}

// Nginx is nginx's limit_req, as ngx_http_limit_req_module.c decides in nginx 1.22.1
// through 1.27.5 (the file is the same in every release between them). One spec is one
// location: one limit_req line per zone, "nginx:rate=10r/s burst=20 nodelay", or several
// joined by "+" in configuration order, "nginx:rate=10r/s burst=5 + rate=1r/s" (each
// zone keyed by the same key).
//
// Per key and zone it keeps nginx's node: excess, in thousandths of a request, and last,
// the millisecond of the last update. Time is nginx's cached millisecond clock: now is
// floored to the millisecond, so requests within one millisecond see the same time. With
// rate in thousandths of a request per second (n·1000 for n r/s, ⌊n·1000/60⌋ for n r/m)
// and burst and delay in thousandths (N·1000), a request at millisecond m computes
//
//	excess = max(0, excess − ⌊rate·(m − last)/1000⌋ + 1000)
//
// and is refused iff excess > burst, which changes nothing (nginx moves the key in its
// LRU list, which no decision reads). Otherwise excess is stored, and last = m unless m
// = last: the leak of the same millisecond is never floored away. The first request of
// a key is admitted and leaves excess 0, without the 1000 every later request adds.
//
// Where it differs from the leaky bucket and GCRA, and why:
//   - burst=N lets N+1 requests through at once, not N: the first request of a key (or of
//     a drained one) leaves excess 0, and the N after it reach N·1000, which still passes.
//   - The clock is whole milliseconds and the leak is floored: with r/m rates the
//     remainder of every update is lost, so 1r/m lets one request through every 62.5 s,
//     not every 60 s (rate 16, and 16·62500/1000 = 1000).
//   - An admitted request is charged at its arrival and then delayed, never re-judged: a
//     request whose excess is above the delay threshold (0 without nodelay or delay=,
//     N·1000 with delay=N, none with nodelay) waits ⌊(excess − threshold)·1000/rate⌋ ms,
//     which Decision.Delay reports as the leaky bucket reports its queueing.
//   - Several zones on one location are tried in order and every one must admit. A zone
//     that refuses stops the walk and nothing is charged anywhere, so a refusal by one
//     zone never counts in another; when all admit, each is charged and the delay is
//     the longest of theirs.
//   - Cost is not read: nginx counts requests, each one whatever it costs.
//
// What it leaves out: nginx frees a node that has been idle for 60 s and has drained
// when a new key needs room (looking only at the two least recently used), and frees
// the least recently used one whatever its state when the zone is full. The model
// keeps every key, as a zone large enough for the keys does; a freed node and a kept one
// decide alike except for a request less than one emission interval after its key
// drained. limit_req_dry_run changes no decision's state and is not modelled.
//
// Time that goes backwards: nginx's clock is monotonic, and it takes a step back as no
// time at all (ms = 0, no leak, last unchanged), which is the house rule: nothing is
// credited twice. (nginx reads a step back of more than a minute as 1 ms, a guard
// against a clock that wraps; the model treats every step back as 0 ms.)
//
// State: 16 bytes per key for one zone (excess and last as int64), 8 for two zones whose
// bursts leave a last update 28 bits or more (both excesses and the last in one word; see
// nginxPair), and otherwise 16 per pair of zones (their last shared, two excesses to a
// word; see nginxNode). nginx's own node is 72
// bytes plus the key in a slab chunk rounded up to a power of two, 128 bytes for
// $binary_remote_addr on a 64-bit build.
//
// Worst case: no window of length T holds more than burst + 1 + ⌊rate·⌈T⌉ms⌋ admissions
// of one key per zone (the least of them with several zones): the first admission of the
// window leaves excess ≥ 0, each later one adds 1000, at most rate·Δ/1000 leaks over the
// Δ ms between the first and the last (floors only lose), and the excess never exceeds
// burst. Δ is at most ⌈T⌉ in milliseconds, one more than T in its floored milliseconds
// can be: a window from 0.9 ms to 1000.8 ms spans 1000 ms of nginx's clock in under a
// second. With r/s rates a greedy client reaches it.
//
// Decisions: Remaining is how many more requests would pass at the same instant.
// RetryAfter is the time until the millisecond from which the request would pass, and
// Reset the time until the key would again let burst+1 through at once (with several
// zones, the least burst+1 of them).
type Nginx struct {
	name   string
	zones  []nginxZone
	stride int  // len(zones)
	nodes  int  // a key's nodes are state[key·nodes:][:nodes]: 1 for one zone, else ⌈zones/2⌉
	delays bool // some zone delays requests (not every one has nodelay)
	state  []nginxNode
	pair   *nginxPair // two zones' keys a word each, until wide (see nginxPair); else nil
}

// nginxPair holds a location of two zones in one 64-bit word per key, when their bursts
// leave room: zone 0's excess in the low bits0 bits, zone 1's in the next bits1 (an
// excess is at most its burst), and the last update above them, in milliseconds after
// base (0 for a key never admitted). Two zones of burst 10 and 20 take 8 bytes per key,
// as GCRA's TAT does, where the wide nodes take 16: at a million keys the word is a
// memory read. base is set half the last's range before the first admission; an
// admission whose millisecond falls outside the range turns every key wide for good,
// exactly (widenPair), and nothing else does.
type nginxPair struct {
	words        []uint64
	bits0, bits1 uint   // the excesses' widths
	lastBits     uint   // the last update's width, at least nginxPairLastBits
	mask0, mask1 uint64 // 2^bits0 − 1, 2^bits1 − 1
	lastShift    uint   // bits0 + bits1
	base         int64  // milliseconds since the Unix epoch that a stored last counts from
	based        bool   // base is set
}

// nginxPairLastBits is the least width of a packed last update: 2²⁸ ms is 3.1 days of
// virtual time around the first admission before the words turn wide.
const nginxPairLastBits = 28

// nginxZone is one limit_req line and its zone's rate, in nginx's own units.
type nginxZone struct {
	rate  int64 // thousandths of a request per second, truncated as nginx truncates n·1000/60
	burst int64 // thousandths of a request: burst·1000
	delay int64 // thousandths: the excess that passes undelayed (0, delay·1000, or no limit)
	// drained is a number of milliseconds after which any stored excess has leaked away
	// whatever it was: elapsed time is clamped to it, so rate·ms never overflows.
	drained int64
	perRate divisor // divides by rate
	text    string  // the zone's parameters, canonical
}

// nginxNode is one key's state in one zone.
type nginxNode struct {
	excess int64 // thousandths of a request
	last   int64 // milliseconds since the Unix epoch; unseen for a key never admitted
}

// A location of several zones keeps a key's nodes packed: every zone's last is the same
// (all start unseen, an admission moves each to the same millisecond or none, a refusal
// changes nothing), so the key keeps it once, in its first node's last; and an excess is
// at most burst, 10⁹ thousandths, so two zones' excesses share one node's excess word,
// zone 2j in the low 32 bits of node j's and zone 2j+1 in the high ones. Two zones take
// 16 bytes per key, as one does.

// packedExcess returns zone i's excess from a key's packed nodes.
func packedExcess(nodes []nginxNode, i int) int64 {
	return int64(uint32(uint64(nodes[i/2].excess) >> (32 * (i % 2))))
}

// setPackedExcess stores zone i's excess e (0 ≤ e < 2³²) in a key's packed nodes.
func setPackedExcess(nodes []nginxNode, i int, e int64) {
	shift := 32 * (i % 2)
	w := uint64(nodes[i/2].excess)&^(0xffffffff<<shift) | uint64(e)<<shift
	nodes[i/2].excess = int64(w)
}

// node returns zone i's node of the key whose nodes start at base.
func (l *Nginx) node(base, i int) nginxNode {
	if l.pair != nil {
		e0, e1, last := l.pair.unpack(l.pair.words[base])
		return nginxNode{excess: [2]int64{e0, e1}[i], last: last}
	}
	if l.stride == 1 {
		return l.state[base]
	}
	nodes := l.state[base : base+l.nodes]
	return nginxNode{excess: packedExcess(nodes, i), last: nodes[0].last}
}

var (
	_ Limiter  = (*Nginx)(nil)
	_ Admitter = (*Nginx)(nil)
	_ Reserver = (*Nginx)(nil)
)

// Largest values a spec may give: rates and excesses stay far from overflow in the
// arithmetic above, and delays in nanoseconds fit a Duration.
const (
	nginxMaxRate  = 1_000_000_000 // requests per second or minute
	nginxMaxBurst = 1_000_000     // requests
	nginxNoDelay  = math.MaxInt64 // the threshold nodelay sets: every excess passes at once
)

func configureNginx(args Args) (Model, error) {
	rateText, ok := args["rate"]
	if !ok {
		return nil, errors.New("rate is required (rate=10r/s or rate=30r/m)")
	}
	z := nginxZone{text: paramsText(kinds[NginxName], args)}
	num, scale := rateText, int64(0)
	switch {
	case strings.HasSuffix(rateText, "r/s"):
		num, scale = strings.TrimSuffix(rateText, "r/s"), 1
	case strings.HasSuffix(rateText, "r/m"):
		num, scale = strings.TrimSuffix(rateText, "r/m"), 60
	}
	if scale == 0 {
		return nil, fmt.Errorf("rate %q: want a unit, r/s or r/m (10r/s, 30r/m)", rateText)
	}
	n, err := parseWhole(num, nginxMaxRate)
	if err != nil || n == 0 {
		return nil, fmt.Errorf("rate %q: want a whole number of requests from 1 to %d before r/s or r/m", rateText, nginxMaxRate)
	}
	z.rate = n * 1000 / scale // integer division, as nginx: 1r/m is 16 thousandths per second
	if v, ok := args["burst"]; ok {
		b, err := parseWhole(v, nginxMaxBurst)
		if err != nil || b == 0 {
			return nil, fmt.Errorf("burst %q: want a whole number from 1 to %d (nginx refuses burst=0; leave burst out for none)", v, nginxMaxBurst)
		}
		z.burst = b * 1000
	}
	switch v, ok := args["delay"]; {
	case ok && args.Has("nodelay"):
		return nil, errors.New("nodelay and delay= together: nginx keeps whichever comes last on the line; give one")
	case ok:
		d, err := parseWhole(v, nginxMaxBurst)
		if err != nil || d == 0 {
			return nil, fmt.Errorf("delay %q: want a whole number from 1 to %d", v, nginxMaxBurst)
		}
		z.delay = d * 1000
	case args.Has("nodelay"):
		z.delay = nginxNoDelay
	}
	// After ⌈(burst+1000)·1000/rate⌉ ms the leak exceeds any excess a node can hold (at
	// most burst) plus the request's 1000.
	z.drained = (z.burst+1000)*1000/z.rate + 1
	z.perRate = newDivisor(z.rate)
	return nginxModel{zones: []nginxZone{z}}, nil
}

// parseWhole reads a whole number written in digits alone (as nginx's ngx_atoi reads one), up to max.
func parseWhole(s string, max int64) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a whole number")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > max {
		return 0, errors.New("too large")
	}
	return n, nil
}

func stackNginx(models []Model) (Model, error) {
	var m nginxModel
	for _, one := range models {
		m.zones = append(m.zones, one.(nginxModel).zones...)
	}
	return m, nil
}

// nginxModel is a configured location: its zones in configuration order.
type nginxModel struct{ zones []nginxZone }

func (m nginxModel) New(Policy) (Limiter, error) { return newNginx(m), nil }

func (m nginxModel) name() string {
	texts := make([]string, len(m.zones))
	for i, z := range m.zones {
		texts[i] = z.text
	}
	return NginxName + ":" + strings.Join(texts, " + ")
}

// Bound is burst + 1 + ⌊rate·⌈T⌉ms⌋ of the tightest zone (see Nginx).
func (m nginxModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	if span <= 0 {
		span = p.Window
	}
	ms := uint64((span + time.Millisecond - 1) / time.Millisecond)
	least := math.Inf(1)
	for _, z := range m.zones {
		// ⌊rate·ms/10⁶⌋ requests in 128 bits: rate is in thousandths per second.
		hi, lo := bits.Mul64(uint64(z.rate), ms)
		leaked, _ := bits.Div64(hi, lo, 1_000_000)
		least = min(least, float64(z.burst/1000+1)+float64(leaked))
	}
	b := Bound{
		Value:   least,
		Formula: "burst + 1 + rate·⌈T⌉ms",
		Source:  "nginx's first request leaves excess 0, so burst+1 pass at once, then one per 1/rate; its millisecond clock can show one more millisecond of leak than a window holds",
		Reached: true,
	}
	if len(m.zones) > 1 {
		b.Formula = "min over zones of burst + 1 + rate·⌈T⌉ms"
		b.Source += "; every zone must admit, so the tightest bounds the location"
	}
	return b, true
}

// newNginx returns the limiter of a configured location.
func newNginx(m nginxModel) *Nginx {
	l := &Nginx{
		name:   m.name(),
		zones:  m.zones,
		stride: len(m.zones),
		nodes:  (len(m.zones) + 1) / 2,
	}
	for _, z := range m.zones {
		l.delays = l.delays || z.delay != nginxNoDelay
	}
	if len(m.zones) == 2 {
		p := &nginxPair{bits0: uint(bits.Len64(uint64(m.zones[0].burst))), bits1: uint(bits.Len64(uint64(m.zones[1].burst)))}
		if p.lastBits = 64 - p.bits0 - p.bits1; p.lastBits >= nginxPairLastBits {
			p.mask0, p.mask1, p.lastShift = 1<<p.bits0-1, 1<<p.bits1-1, p.bits0+p.bits1
			l.pair = p
		}
	}
	return l
}

// unpack returns the excesses and the last update in word w (last unseen for a key never
// admitted).
func (p *nginxPair) unpack(w uint64) (e0, e1, last int64) {
	// Every shift is below 64: the masks tell the compiler so.
	e0 = int64(w & p.mask0)
	e1 = int64(w >> (p.bits0 & 63) & p.mask1)
	last = unseen
	if s := w >> (p.lastShift & 63); s != 0 {
		last = p.base + int64(s)
	}
	return e0, e1, last
}

// pack returns the word of excesses e0 and e1 (each within its width) and last update
// last, and false if last falls outside the range of a stored one.
func (p *nginxPair) pack(e0, e1, last int64) (uint64, bool) {
	s := last - p.base
	if uint64(s-1) >= 1<<(p.lastBits&63)-1 { // s outside [1, 2^lastBits)
		if p.based {
			return 0, false
		}
		p.base, p.based = last-1<<(p.lastBits-1), true
		s = last - p.base
	}
	return uint64(e0) | uint64(e1)<<(p.bits0&63) | uint64(s)<<(p.lastShift&63), true
}

// admitPair is Admit for a location of two zones in packed words.
func (l *Nginx) admitPair(key uint32, m int64) (bool, time.Duration) {
	p := l.pair
	if int(key) >= len(p.words) {
		p.words = grow(p.words, key, 0)
	}
	e0, e1, last := p.unpack(p.words[key])
	z0, z1 := &l.zones[0], &l.zones[1]
	e0, moves := z0.excessAt(&nginxNode{excess: e0, last: last}, m)
	if e0 > z0.burst {
		return false, 0
	}
	e1, _ = z1.excessAt(&nginxNode{excess: e1, last: last}, m)
	if e1 > z1.burst {
		return false, 0
	}
	if moves {
		last = m
	}
	if w, ok := p.pack(e0, e1, last); ok {
		p.words[key] = w
	} else {
		l.widenPair()
		l.state[key] = nginxNode{excess: int64(uint64(e0) | uint64(e1)<<32), last: last}
	}
	if !l.delays {
		return true, 0
	}
	return true, max(z0.delayOf(e0), z1.delayOf(e1))
}

// widenPair turns the packed words into wide nodes, for good.
//
//go:noinline
func (l *Nginx) widenPair() {
	p := l.pair
	l.state = make([]nginxNode, len(p.words), cap(p.words))
	for key, w := range p.words {
		e0, e1, last := p.unpack(w)
		l.state[key] = nginxNode{excess: int64(uint64(e0) | uint64(e1)<<32), last: last}
	}
	l.pair = nil
}

// Name returns the location's canonical spec.
func (l *Nginx) Name() string { return l.name }

// excessAt returns the excess a request at millisecond m leaves in node n, and whether it
// moves n's last: nginx keeps last when no millisecond has passed, and a step back counts
// as none. A key never admitted leaves 0.
func (z *nginxZone) excessAt(n *nginxNode, m int64) (excess int64, moves bool) {
	if n.last == unseen {
		return 0, true
	}
	ms := m - n.last
	if ms <= 0 {
		return n.excess + 1000, false
	}
	e := n.excess - z.rate*min(ms, z.drained)/1000 + 1000
	return max(e, 0), true
}

// delayOf is how long nginx holds an admitted request that leaves excess: whole
// milliseconds, floored, for the excess above the zone's threshold.
func (z *nginxZone) delayOf(excess int64) time.Duration {
	if excess <= z.delay {
		return 0
	}
	return time.Duration(z.perRate.div((excess-z.delay)*1000)) * time.Millisecond
}

// readyAt returns the first millisecond from which a request leaves node n an excess of
// at most x, if nothing else comes: when the leak since last reaches excess + 1000 − x.
// It returns math.MinInt64 when the request would do so at any time.
func (z *nginxZone) readyAt(n nginxNode, x int64) int64 {
	need := n.excess + 1000 - x
	if n.last == unseen || need <= 0 {
		return math.MinInt64
	}
	return n.last + (need*1000+z.rate-1)/z.rate
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset,
// and returns the delay nginx holds an admitted request for.
func (l *Nginx) Admit(key uint32, now int64, _ int64) (bool, time.Duration) {
	if l.pair != nil {
		return l.admitPair(key, nsToMs(now))
	}
	base := int(key) * l.nodes
	if base >= len(l.state) {
		l.growTo(key)
	}
	m := nsToMs(now)
	if l.stride == 1 {
		// One zone, the common case, written out.
		z, n := &l.zones[0], &l.state[base]
		e, moves := z.excessAt(n, m)
		if e > z.burst {
			return false, 0
		}
		n.excess = e
		if moves {
			n.last = m
		}
		return true, z.delayOf(e)
	}
	nodes := l.state[base : base+l.nodes]
	last := nodes[0].last
	if l.stride == 2 {
		// Two zones, the common stack, written out: both must admit before either is
		// charged.
		z0, z1 := &l.zones[0], &l.zones[1]
		packed := uint64(nodes[0].excess)
		e0, moves := z0.excessAt(&nginxNode{excess: int64(uint32(packed)), last: last}, m)
		if e0 > z0.burst {
			return false, 0
		}
		e1, _ := z1.excessAt(&nginxNode{excess: int64(packed >> 32), last: last}, m)
		if e1 > z1.burst {
			return false, 0
		}
		nodes[0].excess = int64(uint64(e0) | uint64(e1)<<32)
		if moves {
			nodes[0].last = m
		}
		if !l.delays {
			return true, 0
		}
		return true, max(z0.delayOf(e0), z1.delayOf(e1))
	}
	// Every zone must admit before any is charged: the new excesses are worked out once
	// (twice for a location of more zones than the stack holds).
	var next [nginxZonesOnStack]int64
	moves := false
	for i := range l.zones {
		z := &l.zones[i]
		e, mv := z.excessAt(&nginxNode{excess: packedExcess(nodes, i), last: last}, m)
		if e > z.burst {
			return false, 0
		}
		moves = mv
		if i < len(next) {
			next[i] = e
		}
	}
	var delay time.Duration
	for i := range l.zones {
		z := &l.zones[i]
		e := int64(0)
		if i < len(next) {
			e = next[i]
		} else {
			e, _ = z.excessAt(&nginxNode{excess: packedExcess(nodes, i), last: last}, m)
		}
		setPackedExcess(nodes, i, e)
		if l.delays {
			delay = max(delay, z.delayOf(e))
		}
	}
	if moves {
		nodes[0].last = m
	}
	return true, delay
}

// nginxZonesOnStack is how many zones Admit charges from excesses it keeps on the stack;
// a location with more works the others out twice.
const nginxZonesOnStack = 8

// Allow decides a request for key at now (nanoseconds since the Unix epoch), in any
// order of now; its cost is not read.
func (l *Nginx) Allow(key uint32, now int64, cost int64) Decision {
	ok, delay := l.Admit(key, now, cost)
	base := int(key) * l.nodes
	d := Decision{Allowed: ok, Delay: delay}
	// Reset: every zone must let the location's capacity through, least burst+1: the
	// first request leaves excess at most burst − (capacity−1)·1000 in each.
	capacity := int64(math.MaxInt64)
	for _, z := range l.zones {
		capacity = min(capacity, z.burst/1000+1)
	}
	reset, retry := int64(math.MinInt64), int64(math.MinInt64)
	for i, z := range l.zones {
		n := l.node(base, i)
		reset = max(reset, z.readyAt(n, z.burst-(capacity-1)*1000))
		if !ok {
			retry = max(retry, z.readyAt(n, z.burst))
		}
	}
	d.Reset = ahead(msToNanos(reset), now)
	if ok {
		d.Remaining = math.MaxInt64
		for i, z := range l.zones {
			d.Remaining = min(d.Remaining, (z.burst-l.node(base, i).excess)/1000)
		}
		return d
	}
	d.RetryAfter = max(ahead(msToNanos(retry), now), 1)
	return d
}

// msToNanos returns the first nanosecond of millisecond m, saturating.
func msToNanos(m int64) int64 {
	switch {
	case m <= math.MinInt64/int64(time.Millisecond):
		return math.MinInt64
	case m >= math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return m * int64(time.Millisecond)
}

// growTo makes room for key's nodes, out of Admit's way.
//
//go:noinline
func (l *Nginx) growTo(key uint32) {
	need := (int(key) + 1) * l.nodes
	l.state = grow(l.state, uint32(need-1), nginxNode{last: unseen})
}

// Keys returns the number of keys held: the highest key decided plus one.
func (l *Nginx) Keys() int {
	if l.pair != nil {
		return len(l.pair.words)
	}
	return len(l.state) / l.nodes
}

// StateBytes returns 16 bytes per key and pair of zones (one zone: 16), and 8 per key
// for two zones while they are packed (see nginxPair).
func (l *Nginx) StateBytes() int64 {
	if l.pair != nil {
		return int64(len(l.pair.words)) * 8
	}
	return int64(len(l.state)) * int64(unsafe.Sizeof(nginxNode{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (l *Nginx) Reserve(keys int) {
	if l.pair != nil {
		l.pair.words = reserve(l.pair.words, keys)
		return
	}
	l.state = reserve(l.state, keys*l.nodes)
}
