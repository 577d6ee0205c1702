package scenario

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// Addr is an IPv4 or IPv6 address written in a scenario file.
type Addr netip.Addr

func (a *Addr) decodeScalar(s string) error {
	v, err := netip.ParseAddr(s)
	if err != nil || v.Zone() != "" {
		return fmt.Errorf("want an IPv4 or IPv6 address such as 203.0.113.7 or 2001:db8::1, got %q", s)
	}
	*a = Addr(v.Unmap())
	return nil
}

// Prefix is an address prefix ("2001:db8:bad::/64") written in a scenario file.
type Prefix netip.Prefix

func (p *Prefix) decodeScalar(s string) error {
	v, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("want an address prefix such as 2001:db8:bad::/64, got %q", s)
	}
	*p = Prefix(v.Masked())
	return nil
}

// PoolSpec is where a generator's addresses come from: IPs addresses from IPBase,
// consecutive ones IPSpacing prefix bits apart (default: consecutive for IPv4, one /64
// each for IPv6).
type PoolSpec struct {
	IPs       int  `yaml:"ips"`
	IPBase    Addr `yaml:"ip_base"`
	IPSpacing int  `yaml:"ip_spacing"`
}

func (p PoolSpec) addrs(defaultCount int, defaultBase string) []netip.Addr {
	base := netip.Addr(p.IPBase)
	if !base.IsValid() {
		base = netip.MustParseAddr(defaultBase)
	}
	n := p.IPs
	if n == 0 {
		n = defaultCount
	}
	spacing := p.IPSpacing
	if spacing == 0 {
		spacing = 32
		if base.Is6() {
			spacing = 64
		}
	}
	return traffic.AddrPool(base, n, spacing)
}

func (s *Scenario) validatePool(file, field string, p PoolSpec) error {
	if p.IPs < 0 || p.IPs > 1<<20 {
		return s.fail(file, field+".ips", "must be between 1 and %d, got %d", 1<<20, p.IPs)
	}
	bits := 32
	if a := netip.Addr(p.IPBase); a.IsValid() && a.Is6() {
		bits = 128
	}
	if p.IPSpacing < 0 || p.IPSpacing > bits {
		return s.fail(file, field+".ip_spacing", "must be a prefix length from 1 to %d, got %d", bits, p.IPSpacing)
	}
	return nil
}

// PageLoadSpec is the page-load section: browsing users whose page views fan out.
type PageLoadSpec struct {
	Users           int      `yaml:"users"`
	Fanout          int      `yaml:"fanout"`
	Spread          Duration `yaml:"spread"`
	Interactions    *int     `yaml:"interactions"`
	InteractionSize int      `yaml:"interaction_size"`
	InteractionGap  Duration `yaml:"interaction_gap"`
	Think           Duration `yaml:"think"`
	UserPrefix      string   `yaml:"user_prefix"`
	PoolSpec        `yaml:",inline"`
	Start           Offset `yaml:"start"`
	End             Offset `yaml:"end"`
	Label           string `yaml:"label"`
}

// NATCrowdSpec is the nat-crowd section: many users behind few public addresses.
type NATCrowdSpec struct {
	// Actor names the crowd when it is labelled attacker (one campaign, default
	// "nat-crowd"); legit users are each their own actor.
	Actor       string  `yaml:"actor"`
	Users       int     `yaml:"users"`
	RatePerUser float64 `yaml:"rate_per_user"`
	UserPrefix  string  `yaml:"user_prefix"`
	PoolSpec    `yaml:",inline"`
	Start       Offset `yaml:"start"`
	End         Offset `yaml:"end"`
	Label       string `yaml:"label"`
}

// RotationSpec is the ip-rotation, ipv6-rotation and xff-spoofing sections: one actor
// at Rate requests per second from ever-changing or forged addresses.
type RotationSpec struct {
	Rate     float64 `yaml:"rate"`
	Actor    string  `yaml:"actor"`
	User     string  `yaml:"user"`
	Route    string  `yaml:"route"`
	PoolSpec `yaml:",inline"`
	Prefix   Prefix `yaml:"prefix"`
	IP       Addr   `yaml:"ip"`
	Start    Offset `yaml:"start"`
	End      Offset `yaml:"end"`
	Label    string `yaml:"label"`
}

// LoginAttackSpec is the login-attack section.
type LoginAttackSpec struct {
	Accounts       int             `yaml:"accounts"`
	AccountPrefix  string          `yaml:"account_prefix"`
	Legit          *LegitLoginSpec `yaml:"legit"`
	Stuffing       *StuffingSpec   `yaml:"stuffing"`
	BruteForce     *BruteSpec      `yaml:"brute_force"`
	SpreadStuffing *StuffingSpec   `yaml:"spread_stuffing"`
	Start          Offset          `yaml:"start"`
	End            Offset          `yaml:"end"`
}

// LegitLoginSpec is the legit users of login-attack.
type LegitLoginSpec struct {
	Users      int      `yaml:"users"`
	Rate       float64  `yaml:"rate"`
	Mistype    *float64 `yaml:"mistype"`
	RetryAfter Duration `yaml:"retry_after"`
	PoolSpec   `yaml:",inline"`
}

// StuffingSpec is a credential-stuffing campaign of login-attack.
type StuffingSpec struct {
	Rate         float64 `yaml:"rate"`
	Tries        int     `yaml:"tries"`
	FirstAccount int     `yaml:"first_account"`
	PoolSpec     `yaml:",inline"`
}

// BruteSpec is the brute force on one account of login-attack.
type BruteSpec struct {
	Account  string  `yaml:"account"`
	Rate     float64 `yaml:"rate"`
	PoolSpec `yaml:",inline"`
}

// RouteSpec is one endpoint of cost-weighted traffic.
type RouteSpec struct {
	Route string  `yaml:"route"`
	Cost  int64   `yaml:"cost"`
	Share float64 `yaml:"share"`
}

// CostWeightedSpec is the cost-weighted section: users calling endpoints of different
// costs.
type CostWeightedSpec struct {
	// Actor names the users when they are labelled attacker (default "cost-weighted").
	Actor       string      `yaml:"actor"`
	Users       int         `yaml:"users"`
	RatePerUser float64     `yaml:"rate_per_user"`
	Routes      []RouteSpec `yaml:"routes"`
	UserPrefix  string      `yaml:"user_prefix"`
	PoolSpec    `yaml:",inline"`
	Start       Offset `yaml:"start"`
	End         Offset `yaml:"end"`
	Label       string `yaml:"label"`
}

// TenantSpec is one tenant of the tenants section.
type TenantSpec struct {
	Name        string  `yaml:"name"`
	Plan        string  `yaml:"plan"`
	Users       int     `yaml:"users"`
	RatePerUser float64 `yaml:"rate_per_user"`
	PoolSpec    `yaml:",inline"`
	Start       Offset `yaml:"start"`
	End         Offset `yaml:"end"`
	Label       string `yaml:"label"`
}

// maxActors bounds generator sizes so that a typo cannot ask for a billion users.
const maxActors = 1 << 22

func (s *Scenario) positiveCount(file, field string, v, def int) (int, error) {
	if v == 0 && def > 0 {
		return def, nil
	}
	if v <= 0 || v > maxActors {
		return 0, s.fail(file, field, "must be between 1 and %d, got %d", maxActors, v)
	}
	return v, nil
}

func (s *Scenario) positiveRate(file, field string, v float64) error {
	if !(v > 0) || v > 1e7 {
		return s.fail(file, field, "must be a positive number of requests per second (at most 1e7), got %g", v)
	}
	return nil
}

// maxTotalRate bounds a crowd's total request rate (users × rate per user) per second, so
// that a typo cannot ask for a run that never ends.
const maxTotalRate = 1e6

func (s *Scenario) crowdRate(file, field string, users int, perUser float64) error {
	if total := float64(users) * perUser; total > maxTotalRate {
		return s.fail(file, field, "users × rate_per_user is %g requests per second, more than %g", total, float64(maxTotalRate))
	}
	return nil
}

func (s *Scenario) validateSpan(file, field string, start, end Offset, epoch time.Time) error {
	st := start.resolve(epoch)
	if st < 0 {
		return s.fail(file, field+".start", "is before the scenario's start")
	}
	if !end.Set && s.Duration == 0 {
		return s.fail(file, field+".end", "is required when the scenario sets no duration")
	}
	if end.Set && end.resolve(epoch) <= st {
		return s.fail(file, field+".end", "must be after start")
	}
	return nil
}

func (s *Scenario) validateLabel(file, field, label string) error {
	if _, err := traffic.ParseClass(label); err != nil {
		return s.fail(file, field+".label", "%v", err)
	}
	return nil
}

func (s *Scenario) validateGenerators(file, field string, t *TrafficSpec, epoch time.Time) error {
	if p := t.PageLoad; p != nil {
		f := field + ".page-load"
		var err error
		if p.Users, err = s.positiveCount(file, f+".users", p.Users, 0); err != nil {
			return err
		}
		if p.Fanout, err = s.positiveCount(file, f+".fanout", p.Fanout, 8); err != nil {
			return err
		}
		if p.InteractionSize, err = s.positiveCount(file, f+".interaction_size", p.InteractionSize, 4); err != nil {
			return err
		}
		if p.Interactions != nil && (*p.Interactions < 0 || *p.Interactions > 1000) {
			return s.fail(file, f+".interactions", "must be between 0 and 1000, got %d", *p.Interactions)
		}
		for _, d := range []struct {
			name string
			v    *Duration
			def  time.Duration
		}{{"spread", &p.Spread, 50 * time.Millisecond}, {"interaction_gap", &p.InteractionGap, 500 * time.Millisecond}, {"think", &p.Think, 10 * time.Second}} {
			if *d.v < 0 {
				return s.fail(file, f+"."+d.name, "must not be negative")
			}
			if *d.v == 0 {
				*d.v = Duration(d.def)
			}
		}
		if err := s.validatePool(file, f, p.PoolSpec); err != nil {
			return err
		}
		if err := s.validateSpan(file, f, p.Start, p.End, epoch); err != nil {
			return err
		}
		if err := s.validateLabel(file, f, p.Label); err != nil {
			return err
		}
	}
	if c := t.NATCrowd; c != nil {
		if err := s.validateCrowd(file, field+".nat-crowd", &c.Users, c.RatePerUser, c.PoolSpec, c.Start, c.End, c.Label, epoch); err != nil {
			return err
		}
	}
	for _, r := range []struct {
		name string
		spec *RotationSpec
	}{{"ip-rotation", t.IPRotation}, {"ipv6-rotation", t.IPv6Rotation}, {"xff-spoofing", t.XFFSpoofing}} {
		if r.spec == nil {
			continue
		}
		f := field + "." + r.name
		if err := s.positiveRate(file, f+".rate", r.spec.Rate); err != nil {
			return err
		}
		if err := s.validatePool(file, f, r.spec.PoolSpec); err != nil {
			return err
		}
		if r.name == "ipv6-rotation" && netip.Prefix(r.spec.Prefix).IsValid() && !netip.Prefix(r.spec.Prefix).Addr().Is6() {
			return s.fail(file, f+".prefix", "must be an IPv6 prefix, got %s", netip.Prefix(r.spec.Prefix))
		}
		// The three sections share one type; refuse what does not apply to this one, so
		// that a setting is never silently ignored.
		set := func(name string) bool { _, ok := s.positions[f+"."+name]; return ok }
		for _, name := range []string{"ips", "ip_base", "ip_spacing", "prefix", "ip"} {
			applies := (r.name == "ip-rotation" && (name == "ips" || name == "ip_base" || name == "ip_spacing")) ||
				(r.name == "ipv6-rotation" && name == "prefix") || (r.name == "xff-spoofing" && name == "ip")
			if set(name) && !applies {
				return s.fail(file, f+"."+name, "does not apply to %s", r.name)
			}
		}
		if err := s.validateSpan(file, f, r.spec.Start, r.spec.End, epoch); err != nil {
			return err
		}
		if err := s.validateLabel(file, f, r.spec.Label); err != nil {
			return err
		}
	}
	if l := t.LoginAttack; l != nil {
		if err := s.validateLogin(file, field+".login-attack", l, epoch); err != nil {
			return err
		}
	}
	if c := t.CostWeighted; c != nil {
		f := field + ".cost-weighted"
		var err error
		if c.Users, err = s.positiveCount(file, f+".users", c.Users, 0); err != nil {
			return err
		}
		if err := s.positiveRate(file, f+".rate_per_user", c.RatePerUser); err != nil {
			return err
		}
		if err := s.crowdRate(file, f+".rate_per_user", c.Users, c.RatePerUser); err != nil {
			return err
		}
		if len(c.Routes) == 0 {
			c.Routes = []RouteSpec{{Route: "GET /list", Cost: 1, Share: 0.95}, {Route: "POST /report", Cost: 20, Share: 0.05}}
		}
		for i, r := range c.Routes {
			rf := fmt.Sprintf("%s.routes[%d]", f, i)
			if r.Route == "" {
				return s.fail(file, rf+".route", "is required")
			}
			if r.Cost < 1 {
				return s.fail(file, rf+".cost", "must be at least 1, got %d", r.Cost)
			}
			if !(r.Share > 0) {
				return s.fail(file, rf+".share", "must be positive, got %g", r.Share)
			}
		}
		if err := s.validatePool(file, f, c.PoolSpec); err != nil {
			return err
		}
		if err := s.validateSpan(file, f, c.Start, c.End, epoch); err != nil {
			return err
		}
		if err := s.validateLabel(file, f, c.Label); err != nil {
			return err
		}
	}
	for i := range t.Tenants {
		tn := &t.Tenants[i]
		f := fmt.Sprintf("%s.tenants[%d]", field, i)
		if tn.Name == "" {
			return s.fail(file, f+".name", "is required")
		}
		if err := s.validateCrowd(file, f, &tn.Users, tn.RatePerUser, tn.PoolSpec, tn.Start, tn.End, tn.Label, epoch); err != nil {
			return err
		}
	}
	return nil
}

func (s *Scenario) validateLogin(file, f string, l *LoginAttackSpec, epoch time.Time) error {
	var err error
	if l.Accounts, err = s.positiveCount(file, f+".accounts", l.Accounts, 10000); err != nil {
		return err
	}
	if l.Legit == nil && l.Stuffing == nil && l.BruteForce == nil && l.SpreadStuffing == nil {
		return s.fail(file, f, "needs at least one of legit, stuffing, brute_force, spread_stuffing")
	}
	if g := l.Legit; g != nil {
		if g.Users, err = s.positiveCount(file, f+".legit.users", g.Users, 0); err != nil {
			return err
		}
		if err := s.positiveRate(file, f+".legit.rate", g.Rate); err != nil {
			return err
		}
		if g.Mistype != nil && (*g.Mistype < 0 || *g.Mistype > 1) {
			return s.fail(file, f+".legit.mistype", "must be a probability from 0 to 1, got %g", *g.Mistype)
		}
		if g.RetryAfter < 0 {
			return s.fail(file, f+".legit.retry_after", "must not be negative")
		}
		if err := s.validatePool(file, f+".legit", g.PoolSpec); err != nil {
			return err
		}
	}
	for _, st := range []struct {
		name string
		spec *StuffingSpec
	}{{"stuffing", l.Stuffing}, {"spread_stuffing", l.SpreadStuffing}} {
		if st.spec == nil {
			continue
		}
		sf := f + "." + st.name
		if err := s.positiveRate(file, sf+".rate", st.spec.Rate); err != nil {
			return err
		}
		if st.spec.Tries, err = s.positiveCount(file, sf+".tries", st.spec.Tries, 2); err != nil {
			return err
		}
		if st.spec.FirstAccount < 0 {
			return s.fail(file, sf+".first_account", "must not be negative")
		}
		if err := s.validatePool(file, sf, st.spec.PoolSpec); err != nil {
			return err
		}
	}
	if b := l.BruteForce; b != nil {
		if err := s.positiveRate(file, f+".brute_force.rate", b.Rate); err != nil {
			return err
		}
		if err := s.validatePool(file, f+".brute_force", b.PoolSpec); err != nil {
			return err
		}
	}
	return s.validateSpan(file, f, l.Start, l.End, epoch)
}

// generatorEnds lists the end offsets of t's generators (for Horizon).
func (t *TrafficSpec) generatorEnds() []Offset {
	var out []Offset
	if t.PageLoad != nil {
		out = append(out, t.PageLoad.End)
	}
	if t.NATCrowd != nil {
		out = append(out, t.NATCrowd.End)
	}
	for _, r := range []*RotationSpec{t.IPRotation, t.IPv6Rotation, t.XFFSpoofing} {
		if r != nil {
			out = append(out, r.End)
		}
	}
	if t.LoginAttack != nil {
		out = append(out, t.LoginAttack.End)
	}
	if t.CostWeighted != nil {
		out = append(out, t.CostWeighted.End)
	}
	for _, tn := range t.Tenants {
		out = append(out, tn.End)
	}
	return out
}

// generatorCount is how many generators of this file's sections t holds.
func (t *TrafficSpec) generatorCount() int {
	n := 0
	for _, set := range []bool{t.PageLoad != nil, t.NATCrowd != nil, t.IPRotation != nil, t.IPv6Rotation != nil,
		t.XFFSpoofing != nil, t.LoginAttack != nil, t.CostWeighted != nil, t.Tenants != nil} {
		if set {
			n++
		}
	}
	return n
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// campaign is the actor name of a generator's users when they are attackers: attack
// traffic is reported per campaign, not per bot.
func campaign(label, actor, def string) string {
	if classOf(label, traffic.Legit) != traffic.Attacker {
		return ""
	}
	return orDefault(actor, def)
}

func classOf(label string, def traffic.Class) traffic.Class {
	if label == "" {
		return def
	}
	c, _ := traffic.ParseClass(label)
	return c
}

// generatorSources builds the sources of t's generators; index numbers the traffic entry
// so that page-load ids of two entries never collide.
func (s *Scenario) generatorSources(t *TrafficSpec, index int, rng *rand.Rand) []traffic.Source {
	epoch := s.EpochTime()
	horizon := s.Horizon()
	span := func(start, end Offset) (time.Duration, time.Duration) {
		e := horizon
		if end.Set {
			e = end.resolve(epoch)
		}
		return start.resolve(epoch), e
	}
	var out []traffic.Source
	if p := t.PageLoad; p != nil {
		start, end := span(p.Start, p.End)
		interactions := 2
		if p.Interactions != nil {
			interactions = *p.Interactions
		}
		out = append(out, traffic.NewPageLoad(traffic.PageLoad{
			Users: p.Users, Fanout: p.Fanout, Spread: time.Duration(p.Spread), Interactions: interactions,
			InteractionSize: p.InteractionSize, InteractionGap: time.Duration(p.InteractionGap), Think: time.Duration(p.Think),
			Addrs: p.addrs(p.Users, "198.18.0.1"), UserPrefix: orDefault(p.UserPrefix, "user-"),
			Start: start, End: end, Class: classOf(p.Label, traffic.Legit), IDBase: uint64(index) << 40,
		}, rng))
	}
	if c := t.NATCrowd; c != nil {
		start, end := span(c.Start, c.End)
		out = append(out, traffic.NewCrowd(traffic.Crowd{
			Actor: campaign(c.Label, c.Actor, "nat-crowd"),
			Users: c.Users, RatePerUser: c.RatePerUser, Addrs: c.addrs(1, "203.0.113.1"),
			UserPrefix: orDefault(c.UserPrefix, "user-"), Start: start, End: end, Class: classOf(c.Label, traffic.Legit),
		}, rng))
	}
	rot := func(name string, r *RotationSpec, build func(*traffic.Rotation)) {
		start, end := span(r.Start, r.End)
		tr := traffic.Rotation{
			Rate: r.Rate, Actor: orDefault(r.Actor, name), User: orDefault(r.User, name),
			Route: r.Route, Start: start, End: end, Class: classOf(r.Label, traffic.Attacker),
		}
		build(&tr)
		tr.Label = fmt.Sprintf("%s: %s at %g/s", name, tr.Actor, r.Rate)
		out = append(out, traffic.NewRotation(tr, rng))
	}
	if r := t.IPRotation; r != nil {
		rot("ip-rotation", r, func(tr *traffic.Rotation) { tr.Addrs = r.addrs(1000, "100.64.0.1") })
	}
	if r := t.IPv6Rotation; r != nil {
		rot("ipv6-rotation", r, func(tr *traffic.Rotation) {
			tr.Prefix = netip.Prefix(r.Prefix)
			if !tr.Prefix.IsValid() {
				tr.Prefix = netip.MustParsePrefix("2001:db8:bad:1::/64")
			}
		})
	}
	if r := t.XFFSpoofing; r != nil {
		rot("xff-spoofing", r, func(tr *traffic.Rotation) {
			ip := netip.Addr(r.IP)
			if !ip.IsValid() {
				ip = netip.MustParseAddr("192.0.2.66")
			}
			tr.Addrs = []netip.Addr{ip}
			tr.XFFSpoof = true
		})
	}
	if l := t.LoginAttack; l != nil {
		start, end := span(l.Start, l.End)
		la := traffic.LoginAttack{Accounts: l.Accounts, AccountPrefix: orDefault(l.AccountPrefix, "acct-"), Start: start, End: end}
		if g := l.Legit; g != nil {
			mistype := 0.1
			if g.Mistype != nil {
				mistype = *g.Mistype
			}
			retry := time.Duration(g.RetryAfter)
			if retry == 0 {
				retry = 3 * time.Second
			}
			la.Legit = &traffic.LegitLogins{Users: g.Users, Rate: g.Rate, Mistype: mistype, RetryAfter: retry, Addrs: g.addrs(g.Users, "198.18.0.1")}
		}
		if st := l.Stuffing; st != nil {
			la.Stuffing = &traffic.Stuffing{Actor: "stuffing", Rate: st.Rate, Tries: st.Tries, FirstAccount: st.FirstAccount, Addrs: st.addrs(3, "192.0.2.10")}
		}
		if st := l.SpreadStuffing; st != nil {
			la.Spread = &traffic.Stuffing{Actor: "spread-stuffing", Rate: st.Rate, Tries: st.Tries, FirstAccount: st.FirstAccount, Addrs: st.addrs(5000, "100.72.0.1")}
		}
		if b := l.BruteForce; b != nil {
			la.BruteForce = &traffic.BruteForce{Actor: "brute-force", Account: orDefault(b.Account, la.AccountPrefix+"7"), Rate: b.Rate, Addrs: b.addrs(2000, "100.64.0.1")}
		}
		out = append(out, traffic.NewLoginAttack(la, rng))
	}
	if c := t.CostWeighted; c != nil {
		start, end := span(c.Start, c.End)
		routes := make([]traffic.Route, len(c.Routes))
		for i, r := range c.Routes {
			routes[i] = traffic.Route{Name: r.Route, Cost: r.Cost, Share: r.Share}
		}
		prefix := orDefault(c.UserPrefix, "user-")
		out = append(out, traffic.NewCrowd(traffic.Crowd{
			Actor: campaign(c.Label, c.Actor, "cost-weighted"),
			Users: c.Users, RatePerUser: c.RatePerUser, Addrs: c.addrs(c.Users, "198.19.0.1"), UserPrefix: prefix,
			Routes: routes, Start: start, End: end, Class: classOf(c.Label, traffic.Legit),
			Label: fmt.Sprintf("cost-weighted: %d %s* users at %g/s over %d routes", c.Users, prefix, c.RatePerUser, len(routes)),
		}, rng))
	}
	for i, tn := range t.Tenants {
		start, end := span(tn.Start, tn.End)
		base := netip.AddrFrom4([4]byte{172, 16 + byte(i%16), 0, 1}).String()
		class := classOf(tn.Label, traffic.Legit)
		actor := ""
		if class == traffic.Attacker {
			actor = tn.Name // a misbehaving tenant is one campaign, not many users
		}
		out = append(out, traffic.NewCrowd(traffic.Crowd{
			Actor: actor,
			Users: tn.Users, RatePerUser: tn.RatePerUser, Addrs: tn.addrs(tn.Users, base),
			UserPrefix: tn.Name + "/user-", Tenant: tn.Name, Plan: orDefault(tn.Plan, "default"),
			Start: start, End: end, Class: class,
			Label: fmt.Sprintf("tenant %s (%s): %d users at %g/s", tn.Name, orDefault(tn.Plan, "default"), tn.Users, tn.RatePerUser),
		}, rng))
	}
	return out
}

// validateCrowd checks the fields a crowd of users shares (nat-crowd, a tenant): how many
// users (defaulted in place), their rate, their address pool, their span and their label.
func (s *Scenario) validateCrowd(file, f string, users *int, ratePerUser float64, pool PoolSpec, start, end Offset, label string, epoch time.Time) error {
	var err error
	if *users, err = s.positiveCount(file, f+".users", *users, 0); err != nil {
		return err
	}
	if err := s.positiveRate(file, f+".rate_per_user", ratePerUser); err != nil {
		return err
	}
	if err := s.crowdRate(file, f+".rate_per_user", *users, ratePerUser); err != nil {
		return err
	}
	if err := s.validatePool(file, f, pool); err != nil {
		return err
	}
	if err := s.validateSpan(file, f, start, end, epoch); err != nil {
		return err
	}
	return s.validateLabel(file, f, label)
}
