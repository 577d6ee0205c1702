package scenario

import (
	"fmt"
	"net/netip"

	"github.com/rlsim/rlsim/traffic"
)

// Addr is an IPv4 or IPv6 address written in a scenario file.
type Addr netip.Addr

// UnmarshalText reads the address from its text in a scenario file.
func (a *Addr) UnmarshalText(text []byte) error {
	s := string(text)
	v, err := netip.ParseAddr(s)
	if err != nil || v.Zone() != "" {
		return fmt.Errorf("want an IPv4 or IPv6 address such as 203.0.113.7 or 2001:db8::1, got %q", s)
	}
	*a = Addr(v.Unmap())
	return nil
}

// Addr is the address; the zero Addr is not valid.
func (a Addr) Addr() netip.Addr { return netip.Addr(a) }

// Prefix is an address prefix ("2001:db8:bad::/64") written in a scenario file.
type Prefix netip.Prefix

// UnmarshalText reads the prefix from its text in a scenario file.
func (p *Prefix) UnmarshalText(text []byte) error {
	s := string(text)
	v, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("want an address prefix such as 2001:db8:bad::/64, got %q", s)
	}
	*p = Prefix(v.Masked())
	return nil
}

// Prefix is the prefix; the zero Prefix is not valid.
func (p Prefix) Prefix() netip.Prefix { return netip.Prefix(p) }

// PoolSpec is where a generator's addresses come from: IPs addresses from IPBase,
// consecutive ones IPSpacing prefix bits apart. Its zero fields mean the generator's own
// choice, resolved by Addrs alone: as many addresses as the generator has senders, from
// the generator's base, consecutive for IPv4 and one /64 each for IPv6.
type PoolSpec struct {
	IPs       int  `yaml:"ips"`
	IPBase    Addr `yaml:"ip_base"`
	IPSpacing int  `yaml:"ip_spacing"`
}

// Addrs is the pool's addresses; count and base are what the generator takes for IPs
// and IPBase when the file leaves them out.
func (p PoolSpec) Addrs(count int, base string) []netip.Addr {
	from := p.IPBase.Addr()
	if !from.IsValid() {
		from = netip.MustParseAddr(base)
	}
	n := p.IPs
	if n == 0 {
		n = count
	}
	spacing := p.IPSpacing
	if spacing == 0 {
		spacing = 32
		if from.Is6() {
			spacing = 64
		}
	}
	return traffic.AddrPool(from, n, spacing)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// classOf is the class a validated label names.
func classOf(label string) traffic.Class {
	c, _ := traffic.ParseClass(label)
	return c
}
