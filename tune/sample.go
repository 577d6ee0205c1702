// Package tune searches the policies a rate limit could be given — algorithm, key, limit,
// window, burst, or a product's model in its own parameters — for the ones that meet a
// user's goals on a sample of traffic (a replayed log or a scenario's requests), and
// returns the Pareto front of what the candidates trade: legitimate requests refused,
// attacker requests admitted, the backend's peak.
//
// The sample is parsed once and held as per-key arrival lists. Every candidate decides
// each key's arrivals with the algorithm's own limiter (a key's decisions depend on its
// own arrivals alone), so the figures are those of a run, not an estimate; the search is
// kept short by bisecting where refusals fall monotonically as the limit or the burst
// grows, and by skipping keys that a candidate provably never refuses (a token bucket
// whose capacity covers the key's arrival curve, a window that never holds more than the
// limit). The command that calls Search re-runs the recommendation as an ordinary replay
// or run and compares every figure.
package tune

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"github.com/rlsim/rlsim/traffic"
)

// bytesPerRequest and bytesPerRequestKey are what Sample holds: per request its arrival
// time (8 bytes), its label (1) and, when some cost is not 1, its cost (8); per request
// and key its place in the key's arrival list (4) and, while building, its key's id (4).
const (
	bytesPerRequest    = 9
	bytesPerRequestKey = 8
)

// Sample is traffic parsed once for a search: every request's arrival time (ns of Unix
// time, the clock the limiters decide on), cost and label, in the order the run delivers
// them, and for each key spec the requests grouped by key.
type Sample struct {
	// Name names the sample in outputs (the log's name, the scenario's).
	Name string
	// Labelled says the sample has attacker requests: goals on attackers mean something.
	Labelled bool

	times    []int64
	costs    []int64 // nil when every cost is 1
	attacker []bool
	legit    int64
	attacks  int64
	keyings  map[string]*Keying
	order    []string // key specs in the order given
}

// Keying is a sample grouped by one key spec ("ip", "user"): the requests of each key, in
// arrival order, and the requests that could not be keyed (which every run refuses).
type Keying struct {
	// Key is the key spec.
	Key string
	// Names are the keys' values ("203.0.113.7", "alice"), by key id.
	Names []string

	start        []uint32 // key k's requests are order[start[k]:start[k+1]]
	order        []uint32
	unkeyed      []uint32
	keyLegit     []int32 // legit requests per key
	keyAttacker  []int32
	unkeyedLegit int64
	unkeyedAtt   int64
}

// Keys is the number of keys.
func (k *Keying) Keys() int { return len(k.Names) }

// Requests is the number of requests in the sample.
func (s *Sample) Requests() int { return len(s.times) }

// Keyings lists the sample's key specs in the order the builder was given them.
func (s *Sample) Keyings() []*Keying {
	out := make([]*Keying, len(s.order))
	for i, k := range s.order {
		out[i] = s.keyings[k]
	}
	return out
}

// Keying returns the grouping by key spec key, or nil.
func (s *Sample) Keying(key string) *Keying { return s.keyings[key] }

// HeldBytes is the memory the sample holds: it grows with requests times key specs, and
// with the keys' names.
func (s *Sample) HeldBytes() int64 {
	n := int64(len(s.times))
	b := n * bytesPerRequest
	if s.costs != nil {
		b += 8 * n
	}
	for _, k := range s.keyings {
		b += 4*int64(len(k.order)+len(k.unkeyed)+len(k.start)) + 8*int64(len(k.keyLegit))
		for _, name := range k.Names {
			b += int64(len(name)) + 16
		}
	}
	return b
}

// Builder builds a Sample from requests given in delivery order.
type Builder struct {
	s       *Sample
	keyers  []traffic.Keyer
	addrs   []map[netip.Addr]uint32
	names   []map[string]uint32
	keyOf   [][]uint32
	allOnes bool
}

// unkeyedID marks a request its key spec could not key.
const unkeyedID = ^uint32(0)

// NewBuilder starts a sample keyed by each of keys (rlsim key specs: ip, user, route, ...).
func NewBuilder(name string, keys []string) (*Builder, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("no key to group by")
	}
	b := &Builder{s: &Sample{Name: name, keyings: map[string]*Keying{}}, allOnes: true}
	for _, k := range keys {
		if _, dup := b.s.keyings[k]; dup {
			return nil, fmt.Errorf("key %s given twice", k)
		}
		keyer, err := traffic.ParseKeyer(k)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k, err)
		}
		b.s.keyings[k] = &Keying{Key: k}
		b.s.order = append(b.s.order, k)
		b.keyers = append(b.keyers, keyer)
		b.addrs = append(b.addrs, map[netip.Addr]uint32{})
		b.names = append(b.names, map[string]uint32{})
		b.keyOf = append(b.keyOf, nil)
	}
	return b, nil
}

// Keyers are the builder's keyers, for what a log reader must read of each line.
func (b *Builder) Keyers() []traffic.Keyer { return slices.Clone(b.keyers) }

// Add appends one request arriving at t (ns of Unix time), labelled attacker or not.
// Requests must come in the order the run delivers them.
func (b *Builder) Add(t int64, r *traffic.Request, attacker bool) {
	s := b.s
	s.times = append(s.times, t)
	cost := max(r.Cost, 1)
	if cost != 1 && b.allOnes {
		b.allOnes = false
		s.costs = make([]int64, len(s.times)-1, cap(s.times))
		for i := range s.costs {
			s.costs[i] = 1
		}
	}
	if !b.allOnes {
		s.costs = append(s.costs, cost)
	}
	s.attacker = append(s.attacker, attacker)
	if attacker {
		s.attacks++
	} else {
		s.legit++
	}
	for i, keyer := range b.keyers {
		id := unkeyedID
		if k, err := keyer.Key(r); err == nil {
			id = b.intern(i, k)
		}
		b.keyOf[i] = append(b.keyOf[i], id)
	}
}

func (b *Builder) intern(i int, k traffic.Key) uint32 {
	kg := b.s.keyings[b.s.order[i]]
	if k.Addr.IsValid() {
		if id, ok := b.addrs[i][k.Addr]; ok {
			return id
		}
		id := uint32(len(kg.Names))
		b.addrs[i][k.Addr] = id
		kg.Names = append(kg.Names, k.Addr.String())
		return id
	}
	if id, ok := b.names[i][k.Name]; ok {
		return id
	}
	id := uint32(len(kg.Names))
	b.names[i][k.Name] = id
	kg.Names = append(kg.Names, k.Name)
	return id
}

// Finish groups the requests by key and returns the sample; the builder is spent.
func (b *Builder) Finish() *Sample {
	s := b.s
	s.Labelled = s.attacks > 0
	for i, name := range s.order {
		kg := s.keyings[name]
		keys := len(kg.Names)
		kg.start = make([]uint32, keys+1)
		kg.keyLegit = make([]int32, keys)
		kg.keyAttacker = make([]int32, keys)
		for j, id := range b.keyOf[i] {
			if id == unkeyedID {
				kg.unkeyed = append(kg.unkeyed, uint32(j))
				if s.attacker[j] {
					kg.unkeyedAtt++
				} else {
					kg.unkeyedLegit++
				}
				continue
			}
			kg.start[id+1]++
			if s.attacker[j] {
				kg.keyAttacker[id]++
			} else {
				kg.keyLegit[id]++
			}
		}
		for k := 1; k <= keys; k++ {
			kg.start[k] += kg.start[k-1]
		}
		kg.order = make([]uint32, kg.start[keys])
		fill := slices.Clone(kg.start[:keys])
		for j, id := range b.keyOf[i] {
			if id != unkeyedID {
				kg.order[fill[id]] = uint32(j)
				fill[id]++
			}
		}
		b.keyOf[i] = nil
		b.addrs[i], b.names[i] = nil, nil
	}
	b.s = nil
	return s
}

// cost is request i's cost.
func (s *Sample) cost(i uint32) int64 {
	if s.costs == nil {
		return 1
	}
	return s.costs[i]
}

// Arrival is one request of a sample as one key spec sees it: its time (ns, the
// sample's clock), its key's value and its cost.
type Arrival struct {
	T    int64
	Key  string
	Cost int64
}

// Span returns the requests of the sample's first span (from its first request, span
// excluded), in order of arrival, each keyed by key spec key: the traffic tune --verify
// sends to a server. Requests key cannot key are left out; nil for an unknown key spec.
func (s *Sample) Span(key string, span int64) []Arrival {
	kg := s.keyings[key]
	if kg == nil || len(s.times) == 0 {
		return nil
	}
	first := slices.Min(s.times)
	type at struct {
		i   uint32
		key int
	}
	var in []at
	for k := range kg.Names {
		for _, i := range kg.order[kg.start[k]:kg.start[k+1]] {
			if s.times[i]-first < span {
				in = append(in, at{i, k})
			}
		}
	}
	slices.SortFunc(in, func(a, b at) int {
		if c := cmp.Compare(s.times[a.i], s.times[b.i]); c != 0 {
			return c
		}
		return cmp.Compare(int64(a.i), int64(b.i))
	})
	out := make([]Arrival, len(in))
	for j, a := range in {
		out[j] = Arrival{T: s.times[a.i], Key: kg.Names[a.key], Cost: s.cost(a.i)}
	}
	return out
}
