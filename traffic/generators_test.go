package traffic

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

func testRNG() *rand.Rand { return rand.New(rand.NewPCG(7, 11)) }

// drain reads a source to the end, checking time order.
func drain(t *testing.T, s Source) []Request {
	t.Helper()
	var out []Request
	var r Request
	for s.Next(&r) {
		if n := len(out); n > 0 && r.At < out[n-1].At {
			t.Fatalf("%s: request %d at %s before the previous one at %s", s, n, r.At, out[n-1].At)
		}
		out = append(out, r)
	}
	return out
}

func within(t *testing.T, what string, got, want, tolerance float64) {
	t.Helper()
	if math.Abs(got-want) > tolerance*want {
		t.Errorf("%s = %.4g, want %.4g ± %.0f%%", what, got, want, tolerance*100)
	}
}

func TestPageLoadFansOutThenInteracts(t *testing.T) {
	p := PageLoad{
		Users: 50, Fanout: 8, Spread: 50 * time.Millisecond, Interactions: 2, InteractionSize: 3,
		InteractionGap: 500 * time.Millisecond, Think: 5 * time.Second,
		Addrs: AddrPool(netip.MustParseAddr("198.18.0.1"), 50, 32), UserPrefix: "user-", End: 10 * time.Minute,
	}
	reqs := drain(t, NewPageLoad(p, testRNG()))
	type load struct {
		n            int
		first, fanAt time.Duration
		fanout       int
		user         string
	}
	loads := map[uint64]*load{}
	for _, r := range reqs {
		if r.PageLoad == 0 || r.User == "" || r.Actor != r.User || !r.ClientIP.IsValid() || r.Class != Legit {
			t.Fatalf("request without its identities: %+v", r)
		}
		l := loads[r.PageLoad]
		if l == nil {
			l = &load{first: r.At, user: r.User}
			loads[r.PageLoad] = l
		}
		if r.User != l.user {
			t.Fatalf("page load %d mixes users %s and %s", r.PageLoad, l.user, r.User)
		}
		l.n++
		if r.Route == "GET /page" {
			l.fanout++
			if r.At-l.first > p.Spread {
				t.Fatalf("fan-out request %s after the first, beyond the spread %s", r.At-l.first, p.Spread)
			}
		}
	}
	for id, l := range loads {
		if l.fanout != 8 || l.n != 8+2*3 {
			t.Fatalf("page load %d: fan-out %d of %d requests, want 8 of 14", id, l.fanout, l.n)
		}
	}
	// One cycle is about 2 interaction gaps + think: each user makes ~600s/6s page loads.
	cycle := 2*p.InteractionGap + p.Think + p.Spread
	within(t, "page loads", float64(len(loads)), float64(p.Users)*float64(p.End)/float64(cycle), 0.1)
}

func TestCrowdSharesItsAddresses(t *testing.T) {
	addrs := AddrPool(netip.MustParseAddr("203.0.113.10"), 2, 32)
	c := Crowd{Users: 1000, RatePerUser: 0.5, Addrs: addrs, UserPrefix: "u", End: time.Minute}
	reqs := drain(t, NewCrowd(c, testRNG()))
	within(t, "requests", float64(len(reqs)), 1000*0.5*60, 0.03)
	users := map[string]bool{}
	perAddr := map[netip.Addr]int{}
	for _, r := range reqs {
		users[r.User] = true
		perAddr[r.ClientIP]++
	}
	if len(perAddr) != 2 {
		t.Fatalf("%d addresses, want 2", len(perAddr))
	}
	for a, n := range perAddr {
		within(t, "share of "+a.String(), float64(n)/float64(len(reqs)), 0.5, 0.05)
	}
	if len(users) < 990 {
		t.Fatalf("%d distinct users, want nearly all 1000", len(users))
	}
}

func TestRotationStaysInsideItsPoolOrPrefix(t *testing.T) {
	pool := AddrPool(netip.MustParseAddr("100.64.0.1"), 1000, 32)
	reqs := drain(t, NewRotation(Rotation{Rate: 50, Addrs: pool, Actor: "a", User: "s", End: time.Minute, Class: Attacker}, testRNG()))
	within(t, "requests", float64(len(reqs)), 3000, 0.05)
	seen := map[netip.Addr]bool{}
	in := map[netip.Addr]bool{}
	for _, a := range pool {
		in[a] = true
	}
	for _, r := range reqs {
		if !in[r.ClientIP] || r.Class != Attacker {
			t.Fatalf("address %s outside the pool, or class %s", r.ClientIP, r.Class)
		}
		seen[r.ClientIP] = true
	}
	if len(seen) < 900 {
		t.Fatalf("used %d of 1000 addresses, want nearly all", len(seen))
	}

	for _, prefix := range []string{"2001:db8:bad:1::/64", "2001:db8:bad::/56", "2001:db8::/100"} {
		p := netip.MustParsePrefix(prefix)
		reqs := drain(t, NewRotation(Rotation{Rate: 50, Prefix: p, End: time.Minute}, testRNG()))
		distinct := map[netip.Addr]bool{}
		subnets := map[netip.Prefix]bool{}
		for _, r := range reqs {
			if !p.Contains(r.ClientIP) {
				t.Fatalf("%s outside %s", r.ClientIP, p)
			}
			distinct[r.ClientIP] = true
			s, _ := r.ClientIP.Prefix(64)
			subnets[s] = true
		}
		if len(distinct) != len(reqs) {
			t.Errorf("%s: %d distinct addresses in %d requests, want a fresh one each time", p, len(distinct), len(reqs))
		}
		if p.Bits() == 56 && len(subnets) < 200 {
			t.Errorf("/56: %d /64s used, want most of 256", len(subnets))
		}
		if p.Bits() >= 64 && len(subnets) != 1 {
			t.Errorf("%s: %d /64s used, want 1", p, len(subnets))
		}
	}
}

func TestXFFSpoofingWritesARandomLeftmostAddress(t *testing.T) {
	real := netip.MustParseAddr("192.0.2.66")
	src := NewRotation(Rotation{Rate: 20, Addrs: []netip.Addr{real}, XFFSpoof: true, End: time.Minute, Class: Attacker}, testRNG())
	n := NewNetwork(2)
	leftmost, _ := ParseKeyer("xff-leftmost")
	trusted, _ := ParseKeyer("xff:2")
	keys := map[Key]bool{}
	count := 0
	var r Request
	for src.Next(&r) {
		n.Deliver(&r)
		count++
		k, err := leftmost.Key(&r)
		if err != nil {
			t.Fatal(err)
		}
		keys[k] = true
		if k, err := trusted.Key(&r); err != nil || k.Addr != real {
			t.Fatalf("xff:2 on %q = %v %v, want %s", r.XFF, k, err, real)
		}
	}
	if len(keys) < count*99/100 {
		t.Fatalf("xff-leftmost saw %d keys in %d requests, want nearly one per request", len(keys), count)
	}
}

func TestLoginAttackCampaignsHaveTheirShape(t *testing.T) {
	c := LoginAttack{
		Accounts: 5000, AccountPrefix: "acct-", End: 5 * time.Minute,
		Legit:      &LegitLogins{Users: 200, Rate: 2, Mistype: 0.1, RetryAfter: 3 * time.Second, Addrs: AddrPool(netip.MustParseAddr("198.18.0.1"), 200, 32)},
		Stuffing:   &Stuffing{Actor: "stuffing", Rate: 10, Tries: 2, FirstAccount: 1000, Addrs: AddrPool(netip.MustParseAddr("192.0.2.10"), 3, 32)},
		BruteForce: &BruteForce{Actor: "brute-force", Account: "acct-7", Rate: 5, Addrs: AddrPool(netip.MustParseAddr("100.64.0.1"), 2000, 32)},
	}
	reqs := drain(t, NewLoginAttack(c, testRNG()))
	byActor := map[string][]Request{}
	legit := 0
	for _, r := range reqs {
		if r.Route != LoginRoute || r.Account == "" {
			t.Fatalf("login without route or account: %+v", r)
		}
		if r.Class == Legit {
			legit++
			continue
		}
		byActor[r.Actor] = append(byActor[r.Actor], r)
	}
	// Legit: 600 logins, 10% of them tried twice.
	within(t, "legit attempts", float64(legit), 2*300*1.1, 0.06)

	tries := map[string]int{}
	ips := map[netip.Addr]bool{}
	for _, r := range byActor["stuffing"] {
		tries[r.Account]++
		ips[r.ClientIP] = true
	}
	for acct, n := range tries {
		if n > 2 {
			t.Fatalf("stuffing tried %s %d times, want at most 2", acct, n)
		}
	}
	within(t, "accounts stuffed", float64(len(tries)), 10*300/2, 0.05)
	if len(ips) != 3 {
		t.Fatalf("stuffing used %d addresses, want 3", len(ips))
	}
	bruteIPs := map[netip.Addr]bool{}
	for _, r := range byActor["brute-force"] {
		if r.Account != "acct-7" {
			t.Fatalf("brute force tried %s", r.Account)
		}
		bruteIPs[r.ClientIP] = true
	}
	within(t, "brute-force attempts", float64(len(byActor["brute-force"])), 1500, 0.06)
	if len(bruteIPs) < 1000 {
		t.Fatalf("brute force used %d addresses, want many", len(bruteIPs))
	}
}

func TestCostWeightedRoutesKeepTheirShares(t *testing.T) {
	c := Crowd{
		Users: 100, RatePerUser: 1, Addrs: AddrPool(netip.MustParseAddr("198.19.0.1"), 100, 32), UserPrefix: "u",
		Routes: []Route{{Name: "GET /list", Cost: 1, Share: 0.95}, {Name: "POST /report", Cost: 20, Share: 0.05}}, End: 2 * time.Minute,
	}
	reqs := drain(t, NewCrowd(c, testRNG()))
	reports, units := 0, int64(0)
	for _, r := range reqs {
		units += r.Cost
		switch {
		case r.Route == "POST /report" && r.Cost == 20:
			reports++
		case r.Route == "GET /list" && r.Cost == 1:
		default:
			t.Fatalf("route %q at cost %d", r.Route, r.Cost)
		}
	}
	within(t, "report share", float64(reports)/float64(len(reqs)), 0.05, 0.1)
	within(t, "units per request", float64(units)/float64(len(reqs)), 0.95+0.05*20, 0.05)
}

func TestAddrPoolSpacing(t *testing.T) {
	v6 := AddrPool(netip.MustParseAddr("2001:db8:1000::1"), 3, 64)
	if v6[1].String() != "2001:db8:1000:1::1" || v6[2].String() != "2001:db8:1000:2::1" {
		t.Fatalf("one /64 apart: %v", v6)
	}
	v4 := AddrPool(netip.MustParseAddr("10.0.0.255"), 2, 32)
	if v4[1].String() != "10.0.1.0" {
		t.Fatalf("consecutive IPv4 carry: %v", v4)
	}
	wide := AddrPool(netip.MustParseAddr("2001:db8::"), 2, 32)
	if wide[1].String() != "2001:db9::" {
		t.Fatalf("one /32 apart: %v", wide)
	}
}

func TestTenantCrowdCarriesTenantAndPlan(t *testing.T) {
	c := Crowd{
		Users: 20, RatePerUser: 1, Addrs: AddrPool(netip.MustParseAddr("172.16.0.1"), 20, 32), UserPrefix: "noisy/user-",
		Tenant: "noisy", Plan: "free", Actor: "noisy", Class: Attacker, End: time.Minute,
	}
	reqs := drain(t, NewCrowd(c, testRNG()))
	within(t, "requests", float64(len(reqs)), 1200, 0.06)
	users := map[string]bool{}
	for _, r := range reqs {
		if r.Tenant != "noisy" || r.Plan != "free" || r.Actor != "noisy" || r.APIKey == "" || r.Route != "GET /api" {
			t.Fatalf("request %+v", r)
		}
		users[r.User] = true
	}
	if len(users) != 20 {
		t.Fatalf("%d users, want 20", len(users))
	}
}
