package scenario

import (
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func init() {
	Register(GeneratorKind{Section: "nat-crowd", New: func() Generator { return new(NATCrowdSpec) }})
}

// NATCrowdSpec is the nat-crowd section: many users behind few public addresses.
type NATCrowdSpec struct {
	// Actor names the crowd when it is labelled attacker (one campaign, default
	// "nat-crowd"); legit users are each their own actor.
	Actor       string  `yaml:"actor"`
	Users       int     `yaml:"users"`
	RatePerUser float64 `yaml:"rate_per_user"`
	// UserPrefix names the users (default "user-"); the pool defaults to one address.
	UserPrefix string `yaml:"user_prefix"`
	PoolSpec   `yaml:",inline"`
	Start      Offset `yaml:"start"`
	End        Offset `yaml:"end"`
	Label      string `yaml:"label"`
}

// Defaults sets the campaign's name and the user prefix.
func (n *NATCrowdSpec) Defaults() {
	n.Actor = orDefault(n.Actor, "nat-crowd")
	n.UserPrefix = orDefault(n.UserPrefix, "user-")
}

// Validate checks the crowd.
func (n *NATCrowdSpec) Validate(c *Check) error {
	return c.crowd("", n.Users, n.RatePerUser, n.PoolSpec, n.Start, n.End, n.Label)
}

// Last is the end, when set.
func (n *NATCrowdSpec) Last(epoch time.Time) time.Duration { return n.End.Resolve(epoch) }

// Sources is one crowd.
func (n *NATCrowdSpec) Sources(b *Build) []traffic.Source {
	start, end := b.Span(n.Start, n.End)
	return []traffic.Source{traffic.NewCrowd(traffic.Crowd{
		Actor: campaign(n.Label, n.Actor),
		Users: n.Users, RatePerUser: n.RatePerUser, Addrs: n.Addrs(1, "203.0.113.1"),
		UserPrefix: n.UserPrefix, Start: start, End: end, Class: classOf(n.Label),
	}, b.RNG)}
}

// crowd checks the fields a crowd of users shares (nat-crowd, a tenant), under prefix:
// how many users, their rate, their address pool, their span and their label.
func (c *Check) crowd(prefix string, users int, ratePerUser float64, pool PoolSpec, start, end Offset, label string) error {
	if err := c.Count(prefix+"users", users); err != nil {
		return err
	}
	if err := c.Rate(prefix+"rate_per_user", ratePerUser); err != nil {
		return err
	}
	if err := c.CrowdRate(prefix+"rate_per_user", users, ratePerUser); err != nil {
		return err
	}
	if err := c.Pool(prefix, pool); err != nil {
		return err
	}
	if err := c.Span(prefix, start, end); err != nil {
		return err
	}
	return c.Label(prefix+"label", label)
}

// campaign is the actor name of a generator's users when they are attackers: attack
// traffic is reported per campaign, not per bot.
func campaign(label, actor string) string {
	if classOf(label) != traffic.Attacker {
		return ""
	}
	return actor
}

// Requests is every user's rate times the span.
func (n *NATCrowdSpec) Requests(b *Build) float64 {
	return float64(n.Users) * n.RatePerUser * seconds(b, n.Start, n.End)
}
