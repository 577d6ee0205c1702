package traffic

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Key is the identity one limit counts a request against: an address (possibly a prefix's
// base address) or a name. It is comparable, so callers intern it with a map.
type Key struct {
	// Addr is set for the address kinds (ip, ipv6/N, xff:K, xff-leftmost).
	Addr netip.Addr
	// Name is set for the name kinds (user, account, tenant, api-key, route), and for a
	// scripted shorthand key that is not an address.
	Name string
}

// String renders the key as it appears in decisions files.
func (k Key) String() string {
	if k.Addr.IsValid() {
		return k.Addr.String()
	}
	return k.Name
}

type keyKind uint8

const (
	keyUser keyKind = iota
	keyAccount
	keyTenant
	keyAPIKey
	keyRoute
	keyIP
	keyIPv6Prefix
	keyXFF
	keyXFFLeftmost
	keyHeader
)

// Keyer maps a request to the key a limit counts it against. The zero Keyer keys by user.
//
// The kinds are:
//
//	user, account, tenant, api-key, route   the request's identity of that name
//	ip            the peer address the server sees (the client when no proxy stands in front)
//	ipv6/N        the same address, IPv6 aggregated to its /N prefix (0 ≤ N ≤ 128); IPv4 unchanged
//	xff:K         the address K from the right of X-Forwarded-For as the server receives it:
//	              with K trusted proxies, the one the first proxy appended (K ≥ 1)
//	xff-leftmost  the first address of X-Forwarded-For, which the client wrote itself (the
//	              common mistake, kept to show it fails); the peer when there is no header
//	header:NAME   the value of the request header NAME (case-insensitive; a log's
//	              $http_x_api_key is header:X-Api-Key)
//
// A request without an identity of the kind falls back to its scripted shorthand Key
// (parsed as an address for the address kinds when it is one). Garbage addresses are never
// keyed: Key returns an error saying why.
type Keyer struct {
	kind   keyKind
	bits   int    // ipv6/N
	hops   int    // xff:K
	header string // header:NAME, canonical
}

// ParseKeyer reads a key kind as scenario files and --key write it.
func ParseKeyer(spec string) (Keyer, error) {
	switch spec {
	case "user":
		return Keyer{kind: keyUser}, nil
	case "account":
		return Keyer{kind: keyAccount}, nil
	case "tenant":
		return Keyer{kind: keyTenant}, nil
	case "api-key":
		return Keyer{kind: keyAPIKey}, nil
	case "route":
		return Keyer{kind: keyRoute}, nil
	case "ip":
		return Keyer{kind: keyIP}, nil
	case "xff-leftmost":
		return Keyer{kind: keyXFFLeftmost}, nil
	}
	if n, ok := strings.CutPrefix(spec, "ipv6/"); ok {
		bits, err := strconv.Atoi(n)
		if err != nil || bits < 0 || bits > 128 || n != strconv.Itoa(bits) {
			return Keyer{}, fmt.Errorf("key %q: the prefix length must be a whole number from 0 to 128", spec)
		}
		return Keyer{kind: keyIPv6Prefix, bits: bits}, nil
	}
	if h, ok := strings.CutPrefix(spec, "header:"); ok {
		name := CanonicalHeader(h)
		if name == "" || strings.ContainsAny(name, " \t:,") {
			return Keyer{}, fmt.Errorf("key %q: want header:NAME with a header name (header:X-Api-Key)", spec)
		}
		return Keyer{kind: keyHeader, header: name}, nil
	}
	if k, ok := strings.CutPrefix(spec, "xff:"); ok {
		hops, err := strconv.Atoi(k)
		if err != nil || hops < 1 || hops > 64 || k != strconv.Itoa(hops) {
			return Keyer{}, fmt.Errorf("key %q: the number of trusted proxies must be a whole number from 1 to 64", spec)
		}
		return Keyer{kind: keyXFF, hops: hops}, nil
	}
	return Keyer{}, fmt.Errorf("unknown key %q (want user, account, tenant, api-key, route, ip, ipv6/N, xff:K, xff-leftmost or header:NAME)", spec)
}

// String is the kind as ParseKeyer reads it.
func (k Keyer) String() string {
	switch k.kind {
	case keyAccount:
		return "account"
	case keyTenant:
		return "tenant"
	case keyAPIKey:
		return "api-key"
	case keyRoute:
		return "route"
	case keyIP:
		return "ip"
	case keyIPv6Prefix:
		return "ipv6/" + strconv.Itoa(k.bits)
	case keyXFF:
		return "xff:" + strconv.Itoa(k.hops)
	case keyXFFLeftmost:
		return "xff-leftmost"
	case keyHeader:
		return "header:" + k.header
	}
	return "user"
}

// Reads is what the keyer reads of a request, for a log parser to build.
func (k Keyer) Reads() Identities {
	switch k.kind {
	case keyUser:
		return WantUser
	case keyAccount:
		return WantAccount | WantUser // a log's user is the account when it names none
	case keyTenant:
		return WantTenant
	case keyAPIKey:
		return WantAPIKey
	case keyRoute:
		return WantRoute
	case keyIP, keyIPv6Prefix:
		return WantIP
	case keyXFF:
		return WantXFF
	case keyXFFLeftmost:
		return WantXFF | WantIP
	case keyHeader:
		return WantHeaders
	}
	return 0
}

// Header is the canonical name of the header a header:NAME keyer reads, else "".
func (k Keyer) Header() string { return k.header }

// ErrNoIdentity is wrapped by Key when a request carries no identity of the keyer's kind
// and no shorthand key.
var ErrNoIdentity = errors.New("request carries no identity of this kind")

// Key returns the key of r. It does not allocate on success.
func (k Keyer) Key(r *Request) (Key, error) {
	var name string
	switch k.kind {
	case keyUser:
		name = r.User
	case keyAccount:
		name = r.Account
	case keyTenant:
		name = r.Tenant
	case keyAPIKey:
		name = r.APIKey
	case keyRoute:
		name = r.Route
	case keyHeader:
		name = r.Headers.Get(k.header)
	case keyIP:
		return k.peer(r)
	case keyIPv6Prefix:
		key, err := k.peer(r)
		if err != nil || !key.Addr.Is6() {
			return key, err
		}
		p, err := key.Addr.Prefix(k.bits)
		if err != nil {
			return Key{}, err
		}
		return Key{Addr: p.Addr()}, nil
	case keyXFF:
		if r.XFF == "" {
			if r.Key != "" {
				return shorthand(r.Key), nil
			}
			return Key{}, fmt.Errorf("%s: no X-Forwarded-For header (%d trusted proxies should have written one)", k, k.hops)
		}
		a, err := FromRight(r.XFF, k.hops)
		if err != nil {
			return Key{}, fmt.Errorf("%s: %w", k, err)
		}
		return Key{Addr: a}, nil
	case keyXFFLeftmost:
		if r.XFF == "" {
			return k.peer(r)
		}
		first, _, _ := strings.Cut(r.XFF, ",")
		a, err := ParseForwardedAddr(first)
		if err != nil {
			return Key{}, fmt.Errorf("%s: X-Forwarded-For entry 1: %w", k, err)
		}
		return Key{Addr: a}, nil
	}
	if name != "" {
		return Key{Name: name}, nil
	}
	if r.Key != "" {
		return Key{Name: r.Key}, nil
	}
	return Key{}, fmt.Errorf("%s: %w", k, ErrNoIdentity)
}

// peer keys by the address the server sees, falling back to the client address a log or
// script gave, then to the shorthand key.
func (k Keyer) peer(r *Request) (Key, error) {
	switch {
	case r.Peer.IsValid():
		return Key{Addr: r.Peer.Unmap()}, nil
	case r.ClientIP.IsValid():
		return Key{Addr: r.ClientIP.Unmap()}, nil
	case r.Key != "":
		return shorthand(r.Key), nil
	}
	return Key{}, fmt.Errorf("%s: %w (no peer or client address)", k, ErrNoIdentity)
}

// shorthand reads a scripted key: an address when it is one (so a script keyed by ip can
// write key: 203.0.113.7), else a name.
func shorthand(s string) Key {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return Key{Addr: a.Unmap()}
	}
	return Key{Name: s}
}

// ParseForwardedAddr reads one X-Forwarded-For entry: an IPv4 or IPv6 address, optionally
// in brackets or with a port, surrounded by optional spaces. IPv4-mapped IPv6 addresses
// become IPv4. Anything else is an error saying what is wrong with it.
func ParseForwardedAddr(s string) (netip.Addr, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Addr{}, errors.New("empty entry")
	}
	var a netip.Addr
	var err error
	switch {
	case strings.HasPrefix(s, "["):
		// [v6] or [v6]:port
		if end := strings.IndexByte(s, ']'); end > 0 && end == len(s)-1 {
			a, err = netip.ParseAddr(s[1:end])
		} else {
			var ap netip.AddrPort
			ap, err = netip.ParseAddrPort(s)
			a = ap.Addr()
		}
	case strings.Count(s, ":") == 1:
		// IPv4 with a port
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		a = ap.Addr()
	default:
		a, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", clip(s))
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q has an interface zone, which no forwarded address carries", clip(s))
	}
	return a.Unmap(), nil
}

// FromRight returns the address k entries from the right of an X-Forwarded-For value
// (k = 1 is the rightmost). It fails when the header has fewer than k entries or the
// entry is not an address; it does not allocate on success.
func FromRight(header string, k int) (netip.Addr, error) {
	if k < 1 {
		return netip.Addr{}, fmt.Errorf("position %d: want 1 or more", k)
	}
	end := len(header)
	for i := 1; ; i++ {
		start := strings.LastIndexByte(header[:end], ',') + 1
		if i == k {
			a, err := ParseForwardedAddr(header[start:end])
			if err != nil {
				return netip.Addr{}, fmt.Errorf("X-Forwarded-For entry %d from the right: %w", k, err)
			}
			return a, nil
		}
		if start == 0 {
			return netip.Addr{}, fmt.Errorf("X-Forwarded-For has %d entries, fewer than the %d trusted proxies", i, k)
		}
		end = start - 1
	}
}

// ParseXFF splits an X-Forwarded-For value into its addresses, left to right. Any entry
// that is not an address fails the whole header, naming the entry.
func ParseXFF(header string) ([]netip.Addr, error) {
	if strings.TrimSpace(header) == "" {
		return nil, errors.New("empty X-Forwarded-For")
	}
	var out []netip.Addr
	for i, part := range strings.Split(header, ",") {
		a, err := ParseForwardedAddr(part)
		if err != nil {
			return nil, fmt.Errorf("X-Forwarded-For entry %d: %w", i+1, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// clip shortens garbage quoted in an error message.
func clip(s string) string {
	const most = 48
	if len(s) <= most {
		return s
	}
	return s[:most] + "…"
}
