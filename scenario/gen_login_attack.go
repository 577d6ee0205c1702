package scenario

import (
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func init() {
	Register(GeneratorKind{Section: "login-attack", New: func() Generator { return new(LoginAttackSpec) }})
}

// LoginAttackSpec is the login-attack section: legit users logging in (and mistyping)
// among credential stuffing, a brute force on one account and stuffing spread thin over
// many addresses.
type LoginAttackSpec struct {
	// Accounts is the number of accounts (default 10000), named AccountPrefix0, ...
	// (default "acct-").
	Accounts       int             `yaml:"accounts"`
	AccountPrefix  string          `yaml:"account_prefix"`
	Legit          *LegitLoginSpec `yaml:"legit"`
	Stuffing       *StuffingSpec   `yaml:"stuffing"`
	BruteForce     *BruteSpec      `yaml:"brute_force"`
	SpreadStuffing *StuffingSpec   `yaml:"spread_stuffing"`
	Start          Offset          `yaml:"start"`
	End            Offset          `yaml:"end"`
}

// LegitLoginSpec is the legit users of login-attack: they mistype their password with
// probability Mistype (default 0.1) and try again RetryAfter later (default 3s). Their
// pool defaults to one address each from 198.18.0.1.
type LegitLoginSpec struct {
	Users      int      `yaml:"users"`
	Rate       float64  `yaml:"rate"`
	Mistype    *float64 `yaml:"mistype"`
	RetryAfter Duration `yaml:"retry_after"`
	PoolSpec   `yaml:",inline"`
}

// StuffingSpec is a credential-stuffing campaign of login-attack: Tries passwords per
// account (default 2) from FirstAccount on. Its pool defaults to 3 addresses from
// 192.0.2.10 (stuffing) or 5000 from 100.72.0.1 (spread_stuffing).
type StuffingSpec struct {
	Rate         float64 `yaml:"rate"`
	Tries        int     `yaml:"tries"`
	FirstAccount int     `yaml:"first_account"`
	PoolSpec     `yaml:",inline"`
}

// BruteSpec is the brute force on one account of login-attack (default the account
// numbered 7), from a pool of 2000 addresses from 100.64.0.1 unless set.
type BruteSpec struct {
	Account  string  `yaml:"account"`
	Rate     float64 `yaml:"rate"`
	PoolSpec `yaml:",inline"`
}

// Defaults sets the accounts, the legit users' habits, the tries and the brute force's
// target.
func (l *LoginAttackSpec) Defaults() {
	if l.Accounts == 0 {
		l.Accounts = 10000
	}
	l.AccountPrefix = orDefault(l.AccountPrefix, "acct-")
	if g := l.Legit; g != nil {
		if g.Mistype == nil {
			g.Mistype = ptr(0.1)
		}
		if g.RetryAfter == 0 {
			g.RetryAfter = Duration(3 * time.Second)
		}
	}
	for _, st := range []*StuffingSpec{l.Stuffing, l.SpreadStuffing} {
		if st != nil && st.Tries == 0 {
			st.Tries = 2
		}
	}
	if b := l.BruteForce; b != nil {
		b.Account = orDefault(b.Account, l.AccountPrefix+"7")
	}
}

// Validate checks the accounts, each campaign that is present and the span.
func (l *LoginAttackSpec) Validate(c *Check) error {
	if err := c.Count("accounts", l.Accounts); err != nil {
		return err
	}
	if l.Legit == nil && l.Stuffing == nil && l.BruteForce == nil && l.SpreadStuffing == nil {
		return c.Fail("", "needs at least one of legit, stuffing, brute_force, spread_stuffing")
	}
	if g := l.Legit; g != nil {
		if err := c.Count("legit.users", g.Users); err != nil {
			return err
		}
		if err := c.Rate("legit.rate", g.Rate); err != nil {
			return err
		}
		if *g.Mistype < 0 || *g.Mistype > 1 {
			return c.Fail("legit.mistype", "must be a probability from 0 to 1, got %g", *g.Mistype)
		}
		if g.RetryAfter < 0 {
			return c.Fail("legit.retry_after", "must not be negative")
		}
		if err := c.Pool("legit.", g.PoolSpec); err != nil {
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
		if err := c.Rate(st.name+".rate", st.spec.Rate); err != nil {
			return err
		}
		if err := c.Count(st.name+".tries", st.spec.Tries); err != nil {
			return err
		}
		if st.spec.FirstAccount < 0 {
			return c.Fail(st.name+".first_account", "must not be negative")
		}
		if err := c.Pool(st.name+".", st.spec.PoolSpec); err != nil {
			return err
		}
	}
	if b := l.BruteForce; b != nil {
		if err := c.Rate("brute_force.rate", b.Rate); err != nil {
			return err
		}
		if err := c.Pool("brute_force.", b.PoolSpec); err != nil {
			return err
		}
	}
	return c.Span("", l.Start, l.End)
}

// Last is the end, when set.
func (l *LoginAttackSpec) Last(epoch time.Time) time.Duration { return l.End.Resolve(epoch) }

// Sources is one login-attack source with every campaign the section holds.
func (l *LoginAttackSpec) Sources(b *Build) []traffic.Source {
	start, end := b.Span(l.Start, l.End)
	la := traffic.LoginAttack{Accounts: l.Accounts, AccountPrefix: l.AccountPrefix, Start: start, End: end}
	if g := l.Legit; g != nil {
		la.Legit = &traffic.LegitLogins{Users: g.Users, Rate: g.Rate, Mistype: *g.Mistype, RetryAfter: time.Duration(g.RetryAfter),
			Addrs: g.Addrs(g.Users, "198.18.0.1")}
	}
	if st := l.Stuffing; st != nil {
		la.Stuffing = &traffic.Stuffing{Actor: "stuffing", Rate: st.Rate, Tries: st.Tries, FirstAccount: st.FirstAccount, Addrs: st.Addrs(3, "192.0.2.10")}
	}
	if st := l.SpreadStuffing; st != nil {
		la.Spread = &traffic.Stuffing{Actor: "spread-stuffing", Rate: st.Rate, Tries: st.Tries, FirstAccount: st.FirstAccount, Addrs: st.Addrs(5000, "100.72.0.1")}
	}
	if bf := l.BruteForce; bf != nil {
		la.BruteForce = &traffic.BruteForce{Actor: "brute-force", Account: bf.Account, Rate: bf.Rate, Addrs: bf.Addrs(2000, "100.64.0.1")}
	}
	return []traffic.Source{traffic.NewLoginAttack(la, b.RNG)}
}

// Requests is every campaign's rate times the span (the legit users' retries of a
// mistyped password on top).
func (l *LoginAttackSpec) Requests(b *Build) float64 {
	var rate float64
	if g := l.Legit; g != nil {
		rate += g.Rate * (1 + *g.Mistype)
	}
	for _, st := range []*StuffingSpec{l.Stuffing, l.SpreadStuffing} {
		if st != nil {
			rate += st.Rate
		}
	}
	if bf := l.BruteForce; bf != nil {
		rate += bf.Rate
	}
	return rate * seconds(b, l.Start, l.End)
}
