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
// the one below, as a heap's sift-down does (BenchmarkActors: about twice as fast as
// Queue's FixMin at 190 actors). It holds n entrants' times and an index per match, and
// once grown it allocates nothing.
//
// Equal (At, Seq) leave in an order fixed by the tree's shape: give every time its own
// Seq for first-in, first-out among equals.
//
// The zero value holds no entrant; Reset gives it n.
type Tournament struct {
	// at and seq are the entrants' times, by entrant.
	at  []time.Duration
	seq []uint64
	// match[k], for k ≥ 1, is the entrant that lost the match at node k; match[0] is the
	// winner of them all. Node k's players are nodes 2k and 2k+1, and entrant i plays at
	// the leaf n+i, so for any n every match has two players.
	match []int32
	won   []int32 // Init's winner of each node
	left  int     // entrants not removed
}

// before reports whether entrant a leaves before entrant b.
func (t *Tournament) before(a, b int32) bool {
	return t.at[a] < t.at[b] || t.at[a] == t.at[b] && t.seq[a] < t.seq[b]
}

// Reset makes the queue hold entrants 0 to n-1, all at time 0 with Seq 0; Set their
// times and call Init before the first Min. It keeps the room of earlier runs.
func (t *Tournament) Reset(n int) {
	t.at = grow(t.at, n)
	t.seq = grow(t.seq, n)
	t.match = grow(t.match, n)
	clear(t.at)
	clear(t.seq)
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
	t.at[i], t.seq[i] = at, seq
}

// Init plays every match, in O(n).
func (t *Tournament) Init() {
	n := len(t.at)
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
		if t.before(b, a) {
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
	return int(w), t.at[w]
}

// FixMin gives the entrant Min returned the time at, ordered among equal times by seq,
// replays its matches, and returns what Min now would: the winner and its time come out
// of the replay, so a loop that runs the earliest entrant again and again need not read
// them back.
func (t *Tournament) FixMin(at time.Duration, seq uint64) (entrant int, next time.Duration) {
	return t.replay(at, seq)
}

// RemoveMin takes the entrant Min returned out of the queue and returns, while Len is
// above 0, what Min now would.
func (t *Tournament) RemoveMin() (entrant int, next time.Duration) {
	t.left--
	return t.replay(math.MaxInt64, math.MaxUint64) // after every time an entrant can hold
}

// replay gives the winner the time (at, seq) and plays its path from its leaf to the
// root: at each node the earlier of the player coming up and the loser kept there goes on,
// and the other stays. The path is fixed before any match is played, so the loads run
// ahead of the comparisons; which player goes on is a coin toss to the branch predictor,
// so it is chosen by conditional moves on the times alone. Equal times, which are rare,
// leave that loop for one that compares their Seq too.
func (t *Tournament) replay(at time.Duration, seq uint64) (int, time.Duration) {
	ats, match := t.at, t.match
	w := match[0]
	ats[w], t.seq[w] = at, seq
	node := (int(w) + len(ats)) >> 1
	for ; node > 0; node >>= 1 {
		l := match[node]
		lat := ats[l]
		if lat == at {
			break
		}
		// The players swap places when the one kept here is earlier: by a mask, and
		// the time by a conditional move.
		var kept int32
		if lat < at {
			kept = 1
		}
		swap := (w ^ l) & -kept
		loser := l ^ swap
		w ^= swap
		if lat < at {
			at = lat
		}
		match[node] = loser
	}
	if node > 0 {
		for ; node > 0; node >>= 1 {
			if l := match[node]; t.before(l, w) {
				match[node], w = w, l
			}
		}
		at = ats[w]
	}
	match[0] = w
	return int(w), at
}
