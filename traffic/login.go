package traffic

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"time"
)

// LoginRoute is the route of every request the login-attack generator makes.
const LoginRoute = "POST /login"

// LoginAttack describes a login endpoint under attack: legit users logging in (and
// mistyping now and then), credential stuffing (a few addresses walking many accounts, a
// few tries each), a brute force on one account from many addresses, and stuffing spread
// over many addresses and many accounts. Each part is optional. Accounts are named
// AccountPrefix0 …; legit user i owns account i.
type LoginAttack struct {
	Accounts      int
	AccountPrefix string
	Legit         *LegitLogins
	Stuffing      *Stuffing
	BruteForce    *BruteForce
	Spread        *Stuffing
	Start, End    time.Duration
}

// LegitLogins are Users logging in at Rate logins per second in all; a login is mistyped
// with probability Mistype and retried after an exponential pause of mean RetryAfter.
type LegitLogins struct {
	Users      int
	Rate       float64
	Mistype    float64
	RetryAfter time.Duration
	Addrs      []netip.Addr
}

// Stuffing is a campaign trying Tries passwords on each account in turn, starting at
// account FirstAccount, at Rate attempts per second from addresses drawn from Addrs.
type Stuffing struct {
	Actor        string
	Rate         float64
	Tries        int
	FirstAccount int
	Addrs        []netip.Addr
}

// BruteForce tries passwords on one Account at Rate attempts per second from addresses
// drawn from Addrs.
type BruteForce struct {
	Actor   string
	Account string
	Rate    float64
	Addrs   []netip.Addr
}

// NewLoginAttack returns the login-attack generator drawing from rng.
func NewLoginAttack(c LoginAttack, rng *rand.Rand) Source {
	accounts := names(c.AccountPrefix, c.Accounts)
	m := &multiSource{}
	var parts []string
	login := func(t time.Duration, class Class, actor, account string, addr netip.Addr) Request {
		return Request{At: t, Cost: 1, Class: class, Actor: actor, User: account, Account: account, Route: LoginRoute, ClientIP: addr}
	}
	if l := c.Legit; l != nil {
		users := names("user-", l.Users)
		emit := func(t time.Duration, q *requestQueue) {
			i := rng.IntN(l.Users)
			r := login(t, Legit, users[i], accounts[i%len(accounts)], l.Addrs[i%len(l.Addrs)])
			q.push(r)
			if rng.Float64() < l.Mistype {
				r.At = t + expMean(rng, l.RetryAfter)
				q.push(r)
			}
		}
		m.spawners = append(m.spawners, newPoissonSpawner(rng, l.Rate, c.Start, c.End, emit))
		parts = append(parts, fmt.Sprintf("%d users at %g logins/s", l.Users, l.Rate))
	}
	for _, s := range []*Stuffing{c.Stuffing, c.Spread} {
		if s == nil {
			continue
		}
		var n int
		emit := func(t time.Duration, q *requestQueue) {
			account := accounts[(s.FirstAccount+n/s.Tries)%len(accounts)]
			n++
			q.push(login(t, Attacker, s.Actor, account, s.Addrs[rng.IntN(len(s.Addrs))]))
		}
		m.spawners = append(m.spawners, newPoissonSpawner(rng, s.Rate, c.Start, c.End, emit))
		parts = append(parts, fmt.Sprintf("%s %g/s from %d addresses", s.Actor, s.Rate, len(s.Addrs)))
	}
	if b := c.BruteForce; b != nil {
		emit := func(t time.Duration, q *requestQueue) {
			q.push(login(t, Attacker, b.Actor, b.Account, b.Addrs[rng.IntN(len(b.Addrs))]))
		}
		m.spawners = append(m.spawners, newPoissonSpawner(rng, b.Rate, c.Start, c.End, emit))
		parts = append(parts, fmt.Sprintf("%s on %s %g/s from %d addresses", b.Actor, b.Account, b.Rate, len(b.Addrs)))
	}
	m.label = "login-attack: " + strings.Join(parts, "; ")
	return m
}
