package run

import (
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
	"unsafe"

	"github.com/rlsim/rlsim/traffic"
)

// maxBlockKeys bounds the key space numbered without a table: beyond it a sparse
// generator (a billion possible keys, a few thousand seen) would make every limiter
// allocate state for keys that never come, so names are interned instead.
const maxBlockKeys = 1 << 24

// keySpace turns request keys into the small integer ids limiters index their state by.
//
// Ids are given in order of first appearance, as the engine path's map gives them, so
// both paths hold the same state for the same keys. Generated keys are looked up without
// hashing: each key prefix of an indexed source (traffic.IndexedSource) owns a block, a
// table from the source's key number k to its id (4 bytes per possible key). Any other key
// name (a scripted key) goes through a map — unless it is itself the name of a generated
// key ("user_17" when a generator names its keys user_0…), in which case it shares that
// key's entry, so a key is one key whichever source sends it. When two prefixes could
// name the same key ("user_1" + "7" and "user_" + "17"), or the blocks are too large,
// every key goes through the map.
type keySpace struct {
	blocks []keyBlock
	byName map[string]uint32
	next   uint32 // the id the next new name gets
	bytes  int64  // what byName holds, estimated (see internedBytes)
}

type keyBlock struct {
	prefix string
	size   int
	ids    []uint32 // key number → 1 + id; 0 while the key has not been seen
}

// newKeySpace plans the ids of a run over sources.
func newKeySpace(sources []traffic.Source) *keySpace {
	ks := &keySpace{byName: map[string]uint32{}}
	total := 0
	for _, src := range sources {
		is, ok := src.(traffic.IndexedSource)
		if !ok {
			continue
		}
		if b := ks.block(is.KeyPrefix()); b != nil {
			if is.Keys() > b.size {
				total += is.Keys() - b.size
				b.size = is.Keys()
			}
			continue
		}
		ks.blocks = append(ks.blocks, keyBlock{prefix: is.KeyPrefix(), size: is.Keys()})
		total += is.Keys()
	}
	for i := range ks.blocks {
		for j := range ks.blocks {
			if i != j && strings.HasPrefix(ks.blocks[i].prefix, ks.blocks[j].prefix) {
				total = maxBlockKeys + 1
			}
		}
	}
	if total > maxBlockKeys {
		ks.blocks = nil
		return ks
	}
	for i := range ks.blocks {
		ks.blocks[i].ids = make([]uint32, ks.blocks[i].size)
	}
	return ks
}

// heldBytes is what the key space holds: the interned names and the blocks' tables.
func (ks *keySpace) heldBytes() int64 { return ks.bytes + 4*int64(ks.planned()) }

// planned is the number of keys the blocks can number: an upper bound of the keys a run
// over generated traffic will see.
func (ks *keySpace) planned() int {
	n := 0
	for _, b := range ks.blocks {
		n += b.size
	}
	return n
}

// blockID returns the id of key number k of block b, giving it the next id the first
// time.
func (ks *keySpace) blockID(b *keyBlock, k int) uint32 {
	if v := b.ids[k]; v != 0 {
		return v - 1
	}
	id := ks.next
	ks.next++
	b.ids[k] = id + 1
	return id
}

func (ks *keySpace) block(prefix string) *keyBlock {
	for i := range ks.blocks {
		if ks.blocks[i].prefix == prefix {
			return &ks.blocks[i]
		}
	}
	return nil
}

// blockOf returns the block of an indexed source's keys, or nil when its keys go
// through the map.
func (ks *keySpace) blockOf(src traffic.IndexedSource) *keyBlock {
	if ks.blocks == nil {
		return nil
	}
	return ks.block(src.KeyPrefix())
}

// id returns the id of a key name.
func (ks *keySpace) id(name string) uint32 {
	if id, ok := ks.byName[name]; ok {
		return id
	}
	var id uint32
	if b, k, ok := ks.generatedKey(name); ok {
		id = ks.blockID(b, k)
	} else {
		id = ks.next
		ks.next++
	}
	ks.byName[name] = id
	ks.bytes += internedBytes(name)
	return id
}

// generatedKey returns the block and key number of name when it is the name of a
// generated key.
func (ks *keySpace) generatedKey(name string) (*keyBlock, int, bool) {
	for i := range ks.blocks {
		b := &ks.blocks[i]
		rest, ok := strings.CutPrefix(name, b.prefix)
		if !ok || rest == "" || (rest[0] == '0' && rest != "0") || rest[0] == '+' || rest[0] == '-' {
			continue
		}
		k, err := strconv.Atoi(rest)
		if err != nil || k < 0 || k >= b.size {
			continue
		}
		return b, k, true
	}
	return nil, 0, false
}

// internedBytes estimates what one map entry from a name to its id holds: the name's
// bytes, its string header, the id, and a Go map slot's share of control bytes and load
// headroom (about 8 bytes at the swiss table's 7/8 load).
func internedBytes(name string) int64 { return int64(len(name)) + 16 + 4 + 8 }

// replayKeys numbers the keys of a replayed log in order of first appearance, as an
// engine's cells do, so a replay holds the state of the same keys whichever way it runs.
// A replay looks up a key for every line, so the common case, an IPv4 address, goes
// through a table of its own: one word per slot, open addressing, one cache line per
// lookup, where a map of traffic.Key (40 bytes with a pointer and a string) takes several.
type replayKeys struct {
	v4    addrTable
	v6    map[[16]byte]uint32
	names map[string]uint32
	next  uint32
	bytes int64 // what the maps hold, estimated as internedBytes does; the table adds its own

	waiting []traffic.Key // the keys of a chunk, until number
	scratch []uint32      // number's addresses
}

func newReplayKeys() *replayKeys {
	return &replayKeys{v6: map[[16]byte]uint32{}, names: map[string]uint32{}}
}

func (k *replayKeys) id(key traffic.Key) uint32 {
	switch a := key.Addr; {
	case a.Is4():
		id, fresh := k.v4.id(v4(a), k.next)
		if fresh {
			k.next++
		}
		return id
	case a.IsValid():
		b := a.As16()
		if id, ok := k.v6[b]; ok {
			return id
		}
		k.v6[b] = k.next
		k.bytes += 16 + 4 + 8
	default:
		if id, ok := k.names[key.Name]; ok {
			return id
		}
		k.names[key.Name] = k.next
		k.bytes += internedBytes(key.Name)
	}
	k.next++
	return k.next - 1
}

// number writes the ids of keys into ids, in order, skipping the unkeyed: what id would
// give them one by one. It first reads the table slots of the IPv4 addresses among them
// (addrTable.touch), so that their lookups, each a cache miss in a table of hundreds of
// thousands of addresses, overlap instead of waiting for one another.
func (k *replayKeys) number(ids []uint32, keys []traffic.Key, unkeyed []bool) {
	addrs := k.scratch[:0]
	for i := range keys {
		if a := keys[i].Addr; !unkeyed[i] && a.Is4() {
			addrs = append(addrs, v4(a))
		}
	}
	k.scratch = addrs
	k.v4.touch(addrs)
	for i := range keys {
		if !unkeyed[i] {
			ids[i] = k.id(keys[i])
		}
		keys[i] = traffic.Key{} // let go of the names
	}
}

// pending returns room for the keys of n requests waiting for number, kept for
// pendingBytes.
func (k *replayKeys) pending(n int) []traffic.Key {
	k.waiting = make([]traffic.Key, n)
	k.scratch = make([]uint32, 0, n)
	return k.waiting
}

// pendingBytes is what the keys waiting for their ids hold (their names are the lines').
func (k *replayKeys) pendingBytes() int64 {
	return int64(cap(k.waiting))*int64(unsafe.Sizeof(traffic.Key{})) + 4*int64(cap(k.scratch))
}

func v4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// heldBytes is what the numbering holds.
func (k *replayKeys) heldBytes() int64 { return k.bytes + 8*int64(len(k.v4.slots)) }

// addrTable maps IPv4 addresses to ids: slot = address<<32 | id+1, 0 when empty, linear
// probing, grown to keep it at most three quarters full (eight slots share a cache line,
// so the longer probes of a fuller table stay in the line a lookup reads anyway).
type addrTable struct {
	slots []uint64
	n     int
	shift uint

	touched uint64 // what touch read, kept so that its reads are not dropped
}

// id returns the id of a, giving it next (and saying so) when a is new.
func (t *addrTable) id(a uint32, next uint32) (uint32, bool) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := (uint64(a) * 0x9e3779b97f4a7c15) >> t.shift; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			t.slots[i] = uint64(a)<<32 | uint64(next) + 1
			t.n++
			return next, true
		}
		if uint32(s>>32) == a {
			return uint32(s) - 1, false
		}
	}
}

// touch reads the slots where the lookups of addrs start, without using what it reads:
// the reads do not depend on one another, so their cache misses overlap, and the lookups
// that follow find their slots in cache.
func (t *addrTable) touch(addrs []uint32) {
	if len(t.slots) == 0 {
		return
	}
	var sum uint64
	slots := t.slots
	for _, a := range addrs {
		sum += slots[(uint64(a)*0x9e3779b97f4a7c15)>>t.shift]
	}
	t.touched += sum
}

func (t *addrTable) grow() {
	old := t.slots
	size := max(2*len(old), 1024)
	t.slots = make([]uint64, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	mask := uint64(size - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := (uint64(uint32(s>>32)) * 0x9e3779b97f4a7c15) >> t.shift
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
