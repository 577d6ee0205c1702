package traffic

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseKeyerRoundTripsAndRefusesNonsense(t *testing.T) {
	for _, spec := range []string{"user", "account", "tenant", "api-key", "route", "ip", "ipv6/64", "ipv6/56", "ipv6/0", "ipv6/128", "xff:1", "xff:3", "xff-leftmost"} {
		k, err := ParseKeyer(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if k.String() != spec {
			t.Errorf("ParseKeyer(%q).String() = %q", spec, k.String())
		}
	}
	for _, spec := range []string{"", "ipv6/", "ipv6/129", "ipv6/-1", "ipv6/064", "xff:0", "xff:", "xff:x", "xff:65", "shoe-size", "IP"} {
		if _, err := ParseKeyer(spec); err == nil {
			t.Errorf("ParseKeyer(%q) accepted", spec)
		}
	}
}

func TestKeyerPicksTheIdentityOfItsKind(t *testing.T) {
	r := Request{
		User: "u1", Account: "a1", Tenant: "t1", APIKey: "k1", Route: "GET /x",
		ClientIP: netip.MustParseAddr("2001:db8:1:2:3:4:5:6"),
		Peer:     netip.MustParseAddr("10.0.0.2"),
		XFF:      "6.6.6.6, 2001:db8:1:2:3:4:5:6, 10.0.0.1",
	}
	tests := []struct{ spec, want string }{
		{"user", "u1"}, {"account", "a1"}, {"tenant", "t1"}, {"api-key", "k1"}, {"route", "GET /x"},
		{"ip", "10.0.0.2"},
		{"ipv6/64", "10.0.0.2"}, // IPv4 is left alone
		{"xff:1", "10.0.0.1"},
		{"xff:2", "2001:db8:1:2:3:4:5:6"},
		{"xff:3", "6.6.6.6"},
		{"xff-leftmost", "6.6.6.6"},
	}
	for _, tt := range tests {
		k, _ := ParseKeyer(tt.spec)
		got, err := k.Key(&r)
		if err != nil {
			t.Fatalf("%s: %v", tt.spec, err)
		}
		if got.String() != tt.want {
			t.Errorf("%s: key %s, want %s", tt.spec, got, tt.want)
		}
	}
	v6 := Request{Peer: netip.MustParseAddr("2001:db8:1:2:3:4:5:6")}
	for spec, want := range map[string]string{"ipv6/64": "2001:db8:1:2::", "ipv6/56": "2001:db8:1::", "ipv6/128": "2001:db8:1:2:3:4:5:6"} {
		k, _ := ParseKeyer(spec)
		got, err := k.Key(&v6)
		if err != nil || got.String() != want {
			t.Errorf("%s: %v %v, want %s", spec, got, err, want)
		}
	}
}

func TestKeyerFallsBackToTheScriptedShorthand(t *testing.T) {
	for _, spec := range []string{"user", "tenant", "ip", "xff:1"} {
		k, _ := ParseKeyer(spec)
		got, err := k.Key(&Request{Key: "user_8812"})
		if err != nil || got.Name != "user_8812" {
			t.Errorf("%s: %v %v, want the shorthand name", spec, got, err)
		}
	}
	k, _ := ParseKeyer("ipv6/64")
	got, err := k.Key(&Request{Key: "2001:db8::1"})
	if err != nil || got.String() != "2001:db8::" {
		t.Errorf("ipv6/64 on an address shorthand: %v %v", got, err)
	}
	if _, err := k.Key(&Request{}); err == nil {
		t.Error("a request with no identity at all was keyed")
	}
}

func TestGarbageAddressesAreRefusedWithAReason(t *testing.T) {
	tests := []struct {
		spec, xff, want string
	}{
		{"xff:1", "1.2.3.4, banana", `"banana" is not an IP address`},
		{"xff:2", "1.2.3.4", "fewer than the 2 trusted proxies"},
		{"xff:1", "1.2.3.4,", "empty entry"},
		{"xff-leftmost", "unknown, 1.2.3.4", `"unknown" is not an IP address`},
		{"xff-leftmost", "fe80::1%eth0, 1.2.3.4", "interface zone"},
		{"xff:1", " , ", "empty entry"},
	}
	for _, tt := range tests {
		k, _ := ParseKeyer(tt.spec)
		got, err := k.Key(&Request{XFF: tt.xff, Peer: netip.MustParseAddr("10.0.0.1")})
		if err == nil {
			t.Errorf("%s on %q: keyed as %q", tt.spec, tt.xff, got)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s on %q: error %q, want it to say %q", tt.spec, tt.xff, err, tt.want)
		}
	}
}

func TestParseForwardedAddrForms(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3.4": "1.2.3.4", " 1.2.3.4 ": "1.2.3.4", "1.2.3.4:8080": "1.2.3.4",
		"2001:db8::1": "2001:db8::1", "[2001:db8::1]": "2001:db8::1", "[2001:db8::1]:443": "2001:db8::1",
		"::ffff:1.2.3.4": "1.2.3.4",
	} {
		a, err := ParseForwardedAddr(in)
		if err != nil || a.String() != want {
			t.Errorf("ParseForwardedAddr(%q) = %v, %v; want %s", in, a, err, want)
		}
	}
}

func TestNetworkBuildsTheChainTrustedProxiesWrite(t *testing.T) {
	client := netip.MustParseAddr("198.51.100.7")
	n := NewNetwork(3)
	r := Request{ClientIP: client, XFFSent: "6.6.6.6"}
	n.Deliver(&r)
	if r.XFF != "6.6.6.6, 198.51.100.7, 10.0.0.1, 10.0.0.2" || r.Peer.String() != "10.0.0.3" {
		t.Fatalf("XFF %q peer %s", r.XFF, r.Peer)
	}
	k, _ := ParseKeyer("xff:3")
	if got, err := k.Key(&r); err != nil || got.Addr != client {
		t.Fatalf("xff:3 = %v %v, want the client", got, err)
	}
	direct := Request{ClientIP: client}
	NewNetwork(0).Deliver(&direct)
	if direct.Peer != client || direct.XFF != "" {
		t.Fatalf("no proxies: peer %s XFF %q", direct.Peer, direct.XFF)
	}
}

func TestKeyDoesNotAllocate(t *testing.T) {
	r := Request{XFF: "6.6.6.6, 198.51.100.7, 10.0.0.1", Peer: netip.MustParseAddr("2001:db8::5"), User: "u"}
	for _, spec := range []string{"user", "ip", "ipv6/64", "xff:2", "xff-leftmost"} {
		k, _ := ParseKeyer(spec)
		if n := testing.AllocsPerRun(100, func() { _, _ = k.Key(&r) }); n != 0 {
			t.Errorf("%s: %v allocations per key", spec, n)
		}
	}
}

func FuzzParseXFF(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "1.2.3.4, 5.6.7.8", "[::1]:80, ::ffff:1.2.3.4", ",,", "unknown", "fe80::1%eth0", "\xff, 1.2.3.4"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, header string, k int) {
		addrs, err := ParseXFF(header)
		if err == nil {
			for _, a := range addrs {
				if !a.IsValid() {
					t.Fatalf("ParseXFF(%q) returned an invalid address without error", header)
				}
			}
		}
		k = k%8 + 1
		if k < 1 {
			k += 8
		}
		a, err := FromRight(header, k)
		if err == nil {
			if !a.IsValid() {
				t.Fatalf("FromRight(%q, %d) gave an invalid address", header, k)
			}
			if addrs != nil && len(addrs) >= k && addrs[len(addrs)-k] != a {
				t.Fatalf("FromRight(%q, %d) = %s, ParseXFF says %s", header, k, a, addrs[len(addrs)-k])
			}
		} else if err.Error() == "" {
			t.Fatal("an error with no reason")
		}
		for _, spec := range []string{"xff-leftmost", "xff:1", "ipv6/48"} {
			kr, _ := ParseKeyer(spec)
			key, err := kr.Key(&Request{XFF: header})
			if err == nil && key == (Key{}) {
				t.Fatalf("%s keyed %q as the empty key", spec, header)
			}
		}
	})
}

func FuzzParseKeyer(f *testing.F) {
	for _, s := range []string{"ipv6/64", "xff:2", "user", "ipv6/999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		k, err := ParseKeyer(spec)
		if err == nil && k.String() != spec {
			t.Fatalf("ParseKeyer(%q) accepted it as %q", spec, k)
		}
	})
}
