package traffic

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"
)

// PageLoad describes browsing users. Each page view fans out to Fanout parallel requests
// (a page's API calls) within Spread; then Interactions bursts follow (open a list, apply
// a filter), each of InteractionSize requests within Spread, separated by exponential
// gaps of mean InteractionGap; then the user thinks for an exponential time of mean Think
// before the next page view. A page load is the view and its interaction bursts: it is
// broken when any of its requests is refused.
type PageLoad struct {
	Users           int
	Fanout          int
	Spread          time.Duration
	Interactions    int
	InteractionSize int
	InteractionGap  time.Duration
	Think           time.Duration
	// Addrs are the users' addresses, user i at Addrs[i % len(Addrs)].
	Addrs      []netip.Addr
	UserPrefix string
	Start, End time.Duration
	Class      Class
	// IDBase is added to page-load ids so that two generators in one run never share one.
	IDBase uint64
}

type pageLoadSource struct {
	multiSource
}

// NewPageLoad returns the page-load generator drawing from rng.
func NewPageLoad(p PageLoad, rng *rand.Rand) Source {
	users := names(p.UserPrefix, p.Users)
	keys := names("key-"+p.UserPrefix, p.Users)
	shared := &pageLoadShared{p: p, rng: rng}
	s := &pageLoadSource{}
	for i := range p.Users {
		u := &pageLoadUser{shared: shared, user: users[i], apiKey: keys[i], addr: p.Addrs[i%len(p.Addrs)]}
		// Users arrive spread over one think time so they do not all load at t=Start.
		u.at = p.Start + time.Duration(rng.Float64()*float64(p.Think))
		s.spawners = append(s.spawners, u)
	}
	s.label = fmt.Sprintf("page-load: %d users, fan-out %d, %d×%d interactions, think %s", p.Users, p.Fanout, p.Interactions, p.InteractionSize, p.Think)
	return s
}

type pageLoadShared struct {
	p       PageLoad
	rng     *rand.Rand
	loads   uint64
	offsets []time.Duration
}

type pageLoadUser struct {
	shared       *pageLoadShared
	user, apiKey string
	addr         netip.Addr
	at           time.Duration
}

func (u *pageLoadUser) next() time.Duration {
	if u.at >= u.shared.p.End {
		return never
	}
	return u.at
}

// spawn emits one whole page load and schedules the user's next one after think time.
func (u *pageLoadUser) spawn(q *requestQueue) {
	sh := u.shared
	p, rng := sh.p, sh.rng
	sh.loads++
	id := p.IDBase + sh.loads
	base := Request{
		Cost: 1, Class: p.Class, Actor: u.user, User: u.user, Account: u.user, APIKey: u.apiKey,
		ClientIP: u.addr, PageLoad: id,
	}
	burst := func(at time.Duration, n int, route string) time.Duration {
		sh.offsets = sh.offsets[:0]
		for range n {
			sh.offsets = append(sh.offsets, time.Duration(rng.Float64()*float64(p.Spread)))
		}
		slices.Sort(sh.offsets)
		last := at
		for _, off := range sh.offsets {
			r := base
			r.At = at + off
			r.Route = route
			q.push(r)
			last = r.At
		}
		return last
	}
	last := burst(u.at, p.Fanout, "GET /page")
	t := u.at
	for range p.Interactions {
		t += expMean(rng, p.InteractionGap)
		last = max(last, burst(t, p.InteractionSize, "GET /api/list"))
	}
	u.at = last + expMean(rng, p.Think)
}
