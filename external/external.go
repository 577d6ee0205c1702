// Package external runs rate limiters rlsim does not ship, so that the same reference and
// metrics judge them as they judge the built-ins: a user's Lua script, run on an embedded
// miniredis or a real Redis (Lua), and a program in any language that speaks JSON lines on
// its standard input and output (Exec).
//
// Each is a factory: New builds a limiter with fresh state (no key seen) for a policy, as
// algorithms.New builds a built-in. The limiters it builds are algorithms.Limiter and
// also
//
//	SetName(key, name)   name each key before its first decision: the script's KEYS[1] and
//	                     the program's "key" are names, not rlsim's integer ids
//	Send(key, now, cost) queue a decision ahead of its answer, and
//	Receive()            take the oldest queued one: open-loop traffic does not depend on
//	                     decisions, so a run writes requests ahead and reads the answers
//	                     in order (Ahead says how far), in pipelines or batched writes
//	Err()                the first request the limiter failed on (a script error, a reply
//	                     of the wrong shape, a program that died, hung or answered
//	                     garbage), named with its key and virtual time; every decision
//	                     after it is a refusal made without asking
//	Close()              release the server or the child process; it returns Err
//
// Allow is Send followed by Receive. Virtual time reaches the limiter as an argument, as
// it reaches a built-in: the script's ARGV[1] (µs) and the program's t_ns. Wall time is
// read only to bound how long a program may take to answer and to report its rate.
package external

import (
	"fmt"

	"github.com/rlsim/rlsim/algorithms"
)

// Limiter is what a factory of this package builds (see the package comment).
type Limiter interface {
	algorithms.Limiter
	SetName(key uint32, name string)
	Send(key uint32, now, cost int64)
	Receive() algorithms.Decision
	Ahead() int
	Err() error
	Close() error
}

// names maps key ids to names; a key never named is "key-<id>".
type names []string

func (n *names) set(key uint32, name string) {
	for int(key) >= len(*n) {
		*n = append(*n, "")
	}
	(*n)[key] = name
}

func (n names) of(key uint32) string {
	if int(key) < len(n) && n[key] != "" {
		return n[key]
	}
	return fmt.Sprintf("key-%d", key)
}

// request is a decision sent and not yet received, kept to name it in an error.
type request struct {
	key       string
	now, cost int64
	index     int64 // 1-based, in the order sent
}

func (r request) String() string {
	return fmt.Sprintf("request %d (key %q at %s, cost %d)", r.index, r.key, virtualTime(r.now), r.cost)
}

// queue is a FIFO that reuses its storage once drained.
type queue[T any] struct {
	items []T
	head  int
}

func (q *queue[T]) push(v T) { q.items = append(q.items, v) }

func (q *queue[T]) len() int { return len(q.items) - q.head }

func (q *queue[T]) pop() T {
	v := q.items[q.head]
	var zero T
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return v
}
