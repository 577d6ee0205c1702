// Package traffic generates the requests rlsim replays: exact scripted arrivals and
// open-loop generators. Every source is a function of virtual time and the run's seeded
// RNG, and yields its requests lazily in time order, so a run holds one pending request
// per source rather than the whole trace.
package traffic

import (
	"fmt"
	"time"
)

// Class tells legitimate traffic from attack traffic, so reports can say who got hurt.
type Class uint8

const (
	// Legit is a request the service wants to serve.
	Legit Class = iota
	// Attacker is a request the limit exists to stop.
	Attacker
)

func (c Class) String() string {
	if c == Attacker {
		return "attacker"
	}
	return "legit"
}

// ParseClass reads "legit" or "attacker"; the empty string is Legit.
func ParseClass(s string) (Class, error) {
	switch s {
	case "", "legit":
		return Legit, nil
	case "attacker":
		return Attacker, nil
	}
	return Legit, fmt.Errorf("unknown label %q (want legit or attacker)", s)
}

// Request is one arrival.
type Request struct {
	// At is the arrival time since the scenario's start.
	At time.Duration
	// Key is the identity the limit is keyed on (a user, an address, ...).
	Key string
	// Cost is the number of units the request spends (≥ 1).
	Cost int64
	// Class labels the request legit or attacker.
	Class Class
}

// Source yields requests in non-decreasing time order.
type Source interface {
	// Next fills r with the next request and reports whether there was one.
	Next(r *Request) bool
	// String describes the source for reports ("poisson 500/s over 500 keys").
	String() string
}
