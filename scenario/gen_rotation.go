package scenario

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// The three rotation sections share one spec type: one actor at a steady rate from
// addresses it changes (ip-rotation, ipv6-rotation) or forges (xff-spoofing).
func init() {
	for _, kind := range []string{"ip-rotation", "ipv6-rotation", "xff-spoofing"} {
		Register(GeneratorKind{Section: kind, New: func() Generator { return &RotationSpec{kind: kind} }})
	}
}

// RotationSpec is the ip-rotation, ipv6-rotation and xff-spoofing sections: one actor
// at Rate requests per second from ever-changing or forged addresses. ip-rotation takes
// the pool fields (default 1000 addresses from 100.64.0.1), ipv6-rotation a prefix
// (default 2001:db8:bad:1::/64) to draw addresses from, xff-spoofing the one real
// address (default 192.0.2.66) behind its forged X-Forwarded-For.
type RotationSpec struct {
	Rate float64 `yaml:"rate"`
	// Actor and User name the attacker (default: the section's name); Route is the
	// endpoint it calls.
	Actor    string `yaml:"actor"`
	User     string `yaml:"user"`
	Route    string `yaml:"route"`
	PoolSpec `yaml:",inline"`
	Prefix   Prefix `yaml:"prefix"`
	IP       Addr   `yaml:"ip"`
	Start    Offset `yaml:"start"`
	End      Offset `yaml:"end"`
	// Label is attacker unless the file says legit.
	Label string `yaml:"label"`

	kind string // the section
}

// Defaults names the actor after the section and fills in the section's addresses.
func (r *RotationSpec) Defaults() {
	r.Actor = orDefault(r.Actor, r.kind)
	r.User = orDefault(r.User, r.kind)
	r.Label = orDefault(r.Label, "attacker")
	switch r.kind {
	case "ipv6-rotation":
		if !r.Prefix.Prefix().IsValid() {
			r.Prefix = Prefix(netip.MustParsePrefix("2001:db8:bad:1::/64"))
		}
	case "xff-spoofing":
		if !r.IP.Addr().IsValid() {
			r.IP = Addr(netip.MustParseAddr("192.0.2.66"))
		}
	}
}

// Validate checks the rate, the addresses (refusing the fields of another rotation
// section, so that a setting is never silently ignored), the span and the label.
func (r *RotationSpec) Validate(c *Check) error {
	if err := c.Rate("rate", r.Rate); err != nil {
		return err
	}
	if err := c.Pool("", r.PoolSpec); err != nil {
		return err
	}
	if r.kind == "ipv6-rotation" && !r.Prefix.Prefix().Addr().Is6() {
		return c.Fail("prefix", "must be an IPv6 prefix, got %s", r.Prefix.Prefix())
	}
	for _, name := range []string{"ips", "ip_base", "ip_spacing", "prefix", "ip"} {
		applies := (r.kind == "ip-rotation" && (name == "ips" || name == "ip_base" || name == "ip_spacing")) ||
			(r.kind == "ipv6-rotation" && name == "prefix") || (r.kind == "xff-spoofing" && name == "ip")
		if c.Set(name) && !applies {
			return c.Fail(name, "does not apply to %s", r.kind)
		}
	}
	if err := c.Span("", r.Start, r.End); err != nil {
		return err
	}
	return c.Label("label", r.Label)
}

// Last is the end, when set.
func (r *RotationSpec) Last(epoch time.Time) time.Duration { return r.End.Resolve(epoch) }

// Sources is one rotating actor.
func (r *RotationSpec) Sources(b *Build) []traffic.Source {
	start, end := b.Span(r.Start, r.End)
	tr := traffic.Rotation{
		Rate: r.Rate, Actor: r.Actor, User: r.User, Route: r.Route, Start: start, End: end, Class: classOf(r.Label),
		Label: fmt.Sprintf("%s: %s at %g/s", r.kind, r.Actor, r.Rate),
	}
	switch r.kind {
	case "ip-rotation":
		tr.Addrs = r.Addrs(1000, "100.64.0.1")
	case "ipv6-rotation":
		tr.Prefix = r.Prefix.Prefix()
	case "xff-spoofing":
		tr.Addrs, tr.XFFSpoof = []netip.Addr{r.IP.Addr()}, true
	}
	return []traffic.Source{traffic.NewRotation(tr, b.RNG)}
}

// Requests is the rate times the span.
func (r *RotationSpec) Requests(b *Build) float64 { return r.Rate * seconds(b, r.Start, r.End) }
