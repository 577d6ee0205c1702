package traffic

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// Crowd describes many users, each sending Poisson traffic at RatePerUser, whose
// addresses come from a pool: user i uses Addrs[i % len(Addrs)]. With fewer addresses than
// users it is a NAT crowd (an office, a school, carrier-grade NAT); with one address per
// user it is ordinary background traffic.
type Crowd struct {
	Users       int
	RatePerUser float64
	Addrs       []netip.Addr
	UserPrefix  string
	// Tenant and Plan, when set, are carried by every request (the tenants generator).
	Tenant, Plan string
	// Actor, when set, names every request's actor (one campaign); otherwise each user
	// is its own actor.
	Actor string
	// Routes picks each request's route and cost; empty means one route "GET /api" at cost 1.
	Routes     []Route
	Start, End time.Duration
	Class      Class
	Label      string
}

// Route is an endpoint with its cost; Share is its weight among the generator's routes.
type Route struct {
	Name  string
	Cost  int64
	Share float64
}

// NewCrowd returns the crowd generator drawing from rng.
func NewCrowd(c Crowd, rng *rand.Rand) Source {
	if len(c.Routes) == 0 {
		c.Routes = []Route{{Name: "GET /api", Cost: 1, Share: 1}}
	}
	users := names(c.UserPrefix, c.Users)
	keys := names("key-"+c.UserPrefix, c.Users)
	var total float64
	for _, r := range c.Routes {
		total += r.Share
	}
	emit := func(t time.Duration, q *requestQueue) {
		i := rng.IntN(c.Users)
		route := c.Routes[0]
		if len(c.Routes) > 1 {
			x := rng.Float64() * total
			for _, r := range c.Routes {
				route = r
				if x < r.Share {
					break
				}
				x -= r.Share
			}
		}
		actor := c.Actor
		if actor == "" {
			actor = users[i]
		}
		q.push(Request{
			At: t, Cost: route.Cost, Class: c.Class, Actor: actor, User: users[i], Account: users[i],
			APIKey: keys[i], Tenant: c.Tenant, Plan: c.Plan, Route: route.Name, ClientIP: c.Addrs[i%len(c.Addrs)],
		})
	}
	label := c.Label
	if label == "" {
		label = fmt.Sprintf("crowd: %d users at %g/s each behind %d addresses", c.Users, c.RatePerUser, len(c.Addrs))
	}
	return &multiSource{
		spawners: []spawner{newPoissonSpawner(rng, c.RatePerUser*float64(c.Users), c.Start, c.End, emit)},
		label:    label,
	}
}

// Rotation describes one actor (by default an attacker) sending Poisson traffic at Rate
// from an address drawn afresh for every request: from the pool Addrs (cloud IPv4
// addresses), or, when Addrs is empty, uniformly inside Prefix (fresh IPv6 addresses in
// the actor's /64 or /56). XFFSpoof, when set, makes the actor write a random IPv4
// address as its own X-Forwarded-For on every request.
type Rotation struct {
	Rate       float64
	Addrs      []netip.Addr
	Prefix     netip.Prefix
	XFFSpoof   bool
	Actor      string
	User       string
	Route      string
	Start, End time.Duration
	Class      Class
	Label      string
}

// NewRotation returns the rotating actor drawing from rng.
func NewRotation(c Rotation, rng *rand.Rand) Source {
	if c.Route == "" {
		c.Route = "GET /api"
	}
	apiKey := "key-" + c.User
	var spoof []byte
	emit := func(t time.Duration, q *requestQueue) {
		var addr netip.Addr
		if len(c.Addrs) > 0 {
			addr = c.Addrs[rng.IntN(len(c.Addrs))]
		} else {
			addr = RandomIn(c.Prefix, rng)
		}
		r := Request{
			At: t, Cost: 1, Class: c.Class, Actor: c.Actor, User: c.User, Account: c.User, APIKey: apiKey,
			Route: c.Route, ClientIP: addr,
		}
		if c.XFFSpoof {
			v := rng.Uint32()
			spoof = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).AppendTo(spoof[:0])
			r.XFFSent = string(spoof)
		}
		q.push(r)
	}
	return &multiSource{
		spawners: []spawner{newPoissonSpawner(rng, c.Rate, c.Start, c.End, emit)},
		label:    c.Label,
	}
}
