// Package traffic generates the requests rlsim replays: exact scripted arrivals and
// open-loop generators. Every source is a function of virtual time and the run's seeded
// RNG, and yields its requests lazily in time order, so a run holds one pending request
// per source rather than the whole trace.
package traffic

import (
	"fmt"
	"net/netip"
	"strings"
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

// MaxCost is the largest cost of one request: 2^32 units. A run's counters sum costs (the
// units a key was admitted in a window, the units reaching the backend); 2^30 requests
// of MaxCost each still sum within an int64, and a scenario bounds its run's units
// (requests × cost) at 2^62.
const MaxCost = 1 << 32

// Request is one arrival and everything a server could know about who sent it. Generators
// precompute the identity strings and addresses of their pools, so filling a Request does
// not allocate on the hot path; a field a generator has no value for stays zero.
type Request struct {
	// At is the arrival time since the scenario's start.
	At time.Duration
	// Key is the shorthand identity of scripted lines: the value of whatever the scenario
	// keys on, used when the request carries no identity of that kind.
	Key string
	// Cost is the number of units the request spends (1 to MaxCost).
	Cost int64
	// Class labels the request legit or attacker.
	Class Class
	// Actor names who sent the request (one browsing user, one attack campaign); reports
	// count legit actors refused at least once. Empty means not tracked.
	Actor string

	// User, Account, Tenant, APIKey and Route are the application-level identities. Account
	// is the account a login tries (known before authentication); User is the authenticated
	// user. Plan is the tenant's plan, which picks a per-plan quota.
	User, Account, Tenant, APIKey, Route, Plan string

	// ClientIP is the address of the machine that sent the request (the truth, which the
	// server may not see).
	ClientIP netip.Addr
	// XFFSent is the X-Forwarded-For value the client itself wrote ("" for an honest
	// client; anything at all for an attacker).
	XFFSent string
	// XFF is the X-Forwarded-For header as the server receives it: XFFSent, then the
	// addresses each trusted proxy appended (the client's, then the proxies' before the
	// last). Empty when no proxy stands in front of the server.
	XFF string
	// Peer is the address of the TCP peer the server sees: the last proxy, or the client
	// when there is none.
	Peer netip.Addr

	// PageLoad groups the requests of one page load (its fan-out and the interaction
	// bursts that follow); 0 means the request belongs to no page load.
	PageLoad uint64

	// Headers are request headers a log recorded, for keys on a header; generated
	// traffic carries none.
	Headers Headers
}

// Headers are request headers packed in one string, "name: value\n" each with the name in
// canonical form (CanonicalHeader), so that a Request stays comparable and a log line's
// headers cost one allocation.
type Headers string

// Get returns the value of the header of canonical name name, or "".
func (h Headers) Get(name string) string {
	s := string(h)
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		if n, v, ok := strings.Cut(line, ": "); ok && n == name {
			return v
		}
		s = rest
	}
	return ""
}

// Add appends header name (canonical) with value; a line break in the value becomes a
// space.
func (h *Headers) Add(name, value string) {
	*h += Headers(name + ": " + strings.ReplaceAll(value, "\n", " ") + "\n")
}

// Source yields requests in non-decreasing time order.
type Source interface {
	// Next fills r with the next request and reports whether there was one.
	Next(r *Request) bool
	// String describes the source for reports ("poisson 500/s over 500 keys").
	String() string
}
