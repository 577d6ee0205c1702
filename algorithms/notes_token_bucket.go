package algorithms

import (
	"math"
	"time"
	"unsafe"
)

// NotesTokenBucketName is the notes' token bucket's name on the command line.
const NotesTokenBucketName = "notes-token-bucket"

func init() {
	Register(Kind{
		Name: NotesTokenBucketName, Rank: 110,
		Summary:   "the design notes' consume: float tokens, retry after whole seconds",
		Configure: byPolicy(func(p Policy) Limiter { return NewNotesTokenBucket(p) }, nil),
		Bucket:    true,
	})
}

// NotesTokenBucket is the design notes' consume function, kept as a variant beside
// TokenBucket. Per key it stores the notes' two numbers, tokens (a float) and updatedAt,
// and decides a request of cost c at now as consume does:
//
//	elapsed = (now − updatedAt) in seconds
//	tokens  = min(capacity, tokens + elapsed·refillPerSec)
//	tokens < c: refuse, retryAfter = ⌈(c − tokens) / refillPerSec⌉ seconds, store tokens
//	otherwise:  admit, store tokens − c
//
// updatedAt becomes now on both paths. capacity is the policy's EffectiveBurst and
// refillPerSec its Limit/Window; a key starts full (the notes do not say how state starts;
// this is rlsim's choice for both buckets).
//
// What rlsim's TokenBucket changes, and why:
//   - RetryAfter is the exact wait, not rounded up to whole seconds here: the rounding
//     belongs to the Retry-After header (response.Seconds), which rounds the same way, so
//     the header agrees and the simulation's clients do not wait up to a second too long.
//   - A request whose cost exceeds the capacity can never pass: a bucket never holds more
//     than capacity. consume still answers ⌈(c − tokens)/refillPerSec⌉ seconds, and a
//     client that waits that long is refused again with the same answer, for ever.
//     TokenBucket answers Never, which the 429 turns into no Retry-After at all.
//   - TokenBucket repeats x/time/rate's arithmetic step by step so that the two agree
//     decision for decision; storing the refilled tokens on a refusal, as consume does,
//     gives the same tokens up to float rounding.
//
// Remaining is the whole tokens left, at least 0; Reset is the time until the bucket is
// full again, rounded up to the nanosecond. It keeps 16 bytes per key.
//
// Time that goes backwards: consume computes a negative elapsed and stores updatedAt =
// now, so a request earlier than the key's last one takes away the refill of the step
// back, and the next later request adds it again: no interval is credited twice.
type NotesTokenBucket struct {
	capacity float64
	perSec   float64 // refillPerSec
	state    []notesTokenBucketState
}

type notesTokenBucketState struct {
	updatedAt int64 // ns; unseen for a key never decided
	tokens    float64
}

var _ Limiter = (*NotesTokenBucket)(nil)

// NewNotesTokenBucket returns the notes' consume as a limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewNotesTokenBucket(p Policy) *NotesTokenBucket {
	return &NotesTokenBucket{
		capacity: float64(p.EffectiveBurst()),
		perSec:   float64(p.Limit) / p.Window.Seconds(),
	}
}

// Name returns "notes-token-bucket".
func (b *NotesTokenBucket) Name() string { return NotesTokenBucketName }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch). A cost below 1 counts as 1.
func (b *NotesTokenBucket) Allow(key uint32, now int64, cost int64) Decision {
	cost = max(cost, 1)
	if int(key) >= len(b.state) {
		b.state = grow(b.state, key, notesTokenBucketState{updatedAt: unseen})
	}
	s := &b.state[key]
	tokens := b.capacity
	if s.updatedAt != unseen {
		elapsed := float64(now-s.updatedAt) / float64(time.Second)
		tokens = math.Min(b.capacity, s.tokens+elapsed*b.perSec)
	}
	var d Decision
	if tokens < float64(cost) {
		wait := (float64(cost) - tokens) / b.perSec
		d.RetryAfter = notesDuration(math.Ceil(wait) * float64(time.Second))
	} else {
		tokens -= float64(cost)
		d.Allowed = true
	}
	s.tokens, s.updatedAt = tokens, now
	d.Remaining = max(int64(math.Floor(tokens)), 0)
	if missing := b.capacity - tokens; missing > 0 {
		d.Reset = notesDuration(math.Ceil(missing / b.perSec * float64(time.Second)))
	}
	return d
}

// notesDuration converts whole nanoseconds to a Duration, the longest one for a value past
// it (consume's seconds can exceed what a Duration holds; the answer stays finite, as the
// notes' is).
func notesDuration(ns float64) time.Duration {
	if ns >= float64(math.MaxInt64) {
		return time.Duration(math.MaxInt64 - 1)
	}
	return time.Duration(ns)
}

// Keys returns the number of keys held: the highest key decided plus one.
func (b *NotesTokenBucket) Keys() int { return len(b.state) }

// StateBytes returns 16 bytes per key held.
func (b *NotesTokenBucket) StateBytes() int64 {
	return int64(len(b.state)) * int64(unsafe.Sizeof(notesTokenBucketState{}))
}
