package sim

import (
	"math"
	"time"
)

// Tournament orders a fixed set of entrants, numbered 0 to n-1, each holding one time,
// by (At, Seq): the queue of a simulation whose every actor has exactly one event pending
// and runs only its own, such as the clients of the backoff experiment. Only the earliest
// entrant's time ever changes (it ran its event and has its next one, or it leaves), so
// the queue is a loser tree: every match on the path from a leaf to the root keeps its
// loser, and putting the winner back replays its path alone. The path is known before
// any comparison is made, so the loads of one level do not wait on the choice made at
// the one below, as a heap's sift-down does; and each level is one comparison instead of
// two. It holds n entrants' times and an index per match, and once grown it allocates
// nothing.
//
// Equal (At, Seq) leave in an order fixed by the tree's shape: give every time its own
// Seq for first-in, first-out among equals.
//
// The zero value holds no entrant; Reset gives it n.
type Tournament struct {
	keys []tkey // the entrants' times, by entrant
	// match[k], for k ≥ 1, is the entrant that lost the match at node k; match[0] is the
	// winner of them all. Node k's players are nodes 2k and 2k+1, and entrant i plays at
	// the leaf n+i, so for any n every match has two players.
	match []int32
	won   []int32 // Init's winner of each node
	left  int     // entrants not removed
}

// tkey is an entrant's time, 16 bytes (an Item of no value would be padded to 24). at
// is the time with its sign bit flipped, so that comparing it unsigned orders it as a
// signed time does.
type tkey struct {
	at, seq uint64
}

const signBit = 1 << 63

func newKey(at time.Duration, seq uint64) tkey { return tkey{uint64(at) ^ signBit, seq} }

// gone is the time of an entrant that left: after every time an entrant can hold.
var gone = tkey{at: math.MaxUint64, seq: math.MaxUint64}

// before reports whether a leaves before b.
func (a tkey) before(b tkey) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

// Reset makes the queue hold entrants 0 to n-1, all at time 0 with Seq 0; Set their
// times and call Init before the first Min. It keeps the room of earlier runs.
func (t *Tournament) Reset(n int) {
	t.keys = grow(t.keys, n)
	t.match = grow(t.match, n)
	clear(t.keys)
	t.left = n
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Set gives entrant i the time at, ordered among equal times by seq. Call Init once every
// entrant has its time.
func (t *Tournament) Set(i int, at time.Duration, seq uint64) {
	t.keys[i] = newKey(at, seq)
}

// Init plays every match, in O(n).
func (t *Tournament) Init() {
	n := len(t.keys)
	if n == 0 {
		return
	}
	// Play the nodes from the last to the root, keeping each node's winner until its
	// parent is played.
	t.won = grow(t.won, n)
	player := func(j int) int32 {
		if j >= n {
			return int32(j - n) // a leaf
		}
		return t.won[j]
	}
	t.won[0] = 0 // with a single entrant there is no match
	for k := n - 1; k >= 1; k-- {
		a, b := player(2*k), player(2*k+1)
		if t.keys[b].before(t.keys[a]) {
			a, b = b, a
		}
		t.won[k], t.match[k] = a, b
	}
	if n > 1 {
		t.won[0] = t.won[1]
	}
	t.match[0] = t.won[0]
}

// Len is the number of entrants that have not left.
func (t *Tournament) Len() int { return t.left }

// Min is the entrant that leaves first and its time. It must not be called when Len is 0.
func (t *Tournament) Min() (entrant int, at time.Duration) {
	w := t.match[0]
	return int(w), time.Duration(t.keys[w].at ^ signBit)
}

// FixMin gives the entrant Min returned the time at, ordered among equal times by seq,
// and replays its matches.
func (t *Tournament) FixMin(at time.Duration, seq uint64) {
	t.replay(newKey(at, seq))
}

// RemoveMin takes the entrant Min returned out of the queue.
func (t *Tournament) RemoveMin() {
	t.left--
	t.replay(gone)
}

// replay gives the winner the time k and plays its path from its leaf to the root: at
// each node the earlier of the player coming up and the loser kept there goes on, and the
// other stays. The path is fixed before any match is played, so the loads run ahead of
// the comparisons; which player goes on is a coin toss to the branch predictor, so it is
// chosen by conditional moves, and only equal times, which are rare, take a branch to
// compare their Seq.
func (t *Tournament) replay(k tkey) {
	keys, match := t.keys, t.match
	w := match[0]
	keys[w] = k
	at, seq := k.at, k.seq
	for node := (int(w) + len(keys)) >> 1; node > 0; node >>= 1 {
		l := match[node]
		lk := keys[l]
		kept := lk.at < at // the loser kept here goes on
		if lk.at == at {
			kept = lk.seq < seq
		}
		// Each assignment under its own condition, so that each compiles to a
		// conditional move.
		loser := l
		if kept {
			loser = w
		}
		if kept {
			w = l
		}
		if kept {
			at = lk.at
		}
		if kept {
			seq = lk.seq
		}
		match[node] = loser
	}
	match[0] = w
}
