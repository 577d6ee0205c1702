package cluster

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// DefaultVNodes is the number of points each node puts on the consistent-hash ring when
// Config.VNodes is zero: Gubernator's default replica count for its replicated
// consistent hash (DefaultReplicas = 512, replicated_hash.go).
const DefaultVNodes = 512

// ring is a consistent-hash ring with virtual nodes: each node in service puts vnodes
// points on a 64-bit circle, at hash64 of "<replica>node-<i>", and a key belongs to the
// node of the first point at or after hash64 of the key's name, wrapping round. Adding or
// removing a node moves only the keys whose arc it takes or leaves — about 1/N of them —
// and every node computes the same owner from the same membership.
type ring struct {
	vnodes int
	points []ringPoint // ascending by hash
	nodes  int         // the nodes 0..nodes-1 the points belong to
}

type ringPoint struct {
	hash uint64
	node int
}

func newRing(vnodes int) *ring { return &ring{vnodes: vnodes} }

// resize makes the ring hold nodes 0..n-1.
func (r *ring) resize(n int) {
	for i := r.nodes; i < n; i++ {
		name := "node-" + strconv.Itoa(i)
		for v := range r.vnodes {
			r.points = append(r.points, ringPoint{hash: hash64(strconv.Itoa(v) + name), node: i})
		}
	}
	if n < r.nodes {
		r.points = slices.DeleteFunc(r.points, func(p ringPoint) bool { return p.node >= n })
	}
	r.nodes = n
	// Equal hashes (a collision between two nodes' points) break by node, so every
	// membership orders the circle the same way.
	slices.SortFunc(r.points, func(a, b ringPoint) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.node, b.node))
	})
}

// owner is the node that owns the key named name.
func (r *ring) owner(name string) int {
	h := hash64(name)
	i, _ := slices.BinarySearchFunc(r.points, h, func(p ringPoint, h uint64) int { return cmp.Compare(p.hash, h) })
	if i == len(r.points) {
		i = 0
	}
	return r.points[i].node
}

// hash64 is FNV-1a followed by murmur3's 64-bit finaliser: FNV-1a alone leaves the high
// bits of short, similar names ("0node-1", "1node-1") close together, which bunches one
// node's points on the circle and hands a few nodes most of the keys.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
