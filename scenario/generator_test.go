package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLayeredLimitErrorsNameTheField(t *testing.T) {
	tests := []struct{ body, want string }{
		{"limits:\n  - {name: a, key: shoe, limit: 1, window: 1m}\n", "t.yaml:3:20: limits[0].key: unknown key \"shoe\""},
		{"limits:\n  - {name: a, key: ip, limit: 0, window: 1m}\n", "limits[0].limit: must be a positive number of units"},
		{"limits:\n  - {name: a, key: ip, limit: 1, window: 1m}\n  - {name: a, key: user, limit: 1, window: 1m}\n", "limits[1].name: layer \"a\" is named twice"},
		{"limits:\n  - {key: ip, limit: 1, window: 1m, plans: [{name: free, limit: -1}]}\n", "limits[0].plans[0].limit: must be a positive"},
		{"policy: {limit: 1, window: 1s}\nkey: xff:0\n", "key: key \"xff:0\": the number of trusted proxies"},
		{"policy: {limit: 1, window: 1s}\nproxies: -1\n", "proxies: must be a number of trusted proxies"},
	}
	for _, tt := range tests {
		body := "duration: 1m\n" + tt.body + "traffic:\n  - nat-crowd: {users: 1, rate_per_user: 1}\n"
		_, err := Parse("t.yaml", []byte(body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.body, err, tt.want)
		}
	}
}

func TestGeneratorErrorsNameTheField(t *testing.T) {
	tests := []struct{ traffic, want string }{
		{"page-load: {users: 0}", "traffic[0].page-load.users: must be between 1"},
		{"page-load: {users: 3, think: -1s}", "traffic[0].page-load.think: must not be negative"},
		{"nat-crowd: {users: 5, rate_per_user: 0}", "traffic[0].nat-crowd.rate_per_user: must be a positive number"},
		{"nat-crowd: {users: 4000000, rate_per_user: 1000}", "traffic[0].nat-crowd.rate_per_user: users × rate_per_user is 4e+09"},
		{"nat-crowd: {users: 5, rate_per_user: 1, ip_base: 300.1.1.1}", "traffic[0].nat-crowd.ip_base: want an IPv4 or IPv6 address"},
		{"ipv6-rotation: {rate: 5, prefix: 10.0.0.0/8}", "traffic[0].ipv6-rotation.prefix: must be an IPv6 prefix"},
		{"ipv6-rotation: {rate: 5, prefix: nonsense}", "traffic[0].ipv6-rotation.prefix: want an address prefix"},
		{"login-attack: {accounts: 10}", "traffic[0].login-attack: needs at least one of"},
		{"login-attack: {legit: {users: 5, rate: 1, mistype: 2}}", "traffic[0].login-attack.legit.mistype: must be a probability"},
		{"cost-weighted: {users: 5, rate_per_user: 1, routes: [{route: x, cost: 0, share: 1}]}", "traffic[0].cost-weighted.routes[0].cost: must be at least 1"},
		{"tenants: [{plan: free, users: 1, rate_per_user: 1}]", "traffic[0].tenants[0].name: is required"},
		{"xff-spoofing: {rate: 1, colour: red}", "traffic[0].xff-spoofing.colour: unknown field"},
	}
	for _, tt := range tests {
		body := "duration: 1m\npolicy: {limit: 1, window: 1s}\ntraffic:\n  - " + tt.traffic + "\n"
		_, err := Parse("t.yaml", []byte(body))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "t.yaml:4:") {
			t.Errorf("%s: error %v, want t.yaml:4:…%q", tt.traffic, err, tt.want)
		}
	}
}

func TestSectionsRefuseSettingsThatDoNotApply(t *testing.T) {
	tests := []struct{ body, want string }{
		{"policy: {limit: 1, window: 1s}\ntraffic:\n  - ip-rotation: {rate: 1, prefix: \"2001:db8::/64\"}\n", "traffic[0].ip-rotation.prefix: does not apply to ip-rotation"},
		{"policy: {limit: 1, window: 1s}\ntraffic:\n  - xff-spoofing: {rate: 1, ips: 5}\n", "traffic[0].xff-spoofing.ips: does not apply to xff-spoofing"},
		{"key: ip\nlimits: [{key: ip, limit: 1, window: 1s}]\ntraffic:\n  - nat-crowd: {users: 1, rate_per_user: 1}\n", "t.yaml:2:6: key: is set aside by limits"},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte("duration: 1m\n"+tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

func TestTrafficEntryHoldsExactlyOneRegisteredSection(t *testing.T) {
	const list = "(cost-weighted, ip-rotation, ipv6-rotation, login-attack, nat-crowd, page-load, poisson, script, tenants or xff-spoofing)"
	tests := []struct{ entry, want string }{
		{"{}", "t.yaml:4:5: traffic[0]: each traffic entry holds exactly one generator " + list + ", found 0"},
		{"{nat-crowd: {users: 1, rate_per_user: 1}, poisson: {rate: 1, keys: 1}}", "t.yaml:4:5: traffic[0]: each traffic entry holds exactly one generator " + list + ", found 2"},
		{"{poison: {rate: 1}}", "t.yaml:4:6: traffic[0].poison: unknown field (known: " + strings.ReplaceAll(strings.Trim(list, "()"), " or ", ", ") + ")"},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte("duration: 1m\npolicy: {limit: 1, window: 1s}\ntraffic:\n  - "+tt.entry+"\n"))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.entry, err, tt.want)
		}
	}
}

// Defaults are applied once, by Parse; validating again finds nothing to change.
func TestValidationChangesNothing(t *testing.T) {
	for _, n := range Builtins() {
		sc, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		before, err := json.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.validate(sc.Source); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if after, _ := json.Marshal(sc); string(after) != string(before) {
			t.Errorf("%s: validating changed the scenario:\n%s\n%s", n, before, after)
		}
	}
}

func TestRegisteringASectionTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a second poisson was registered")
		}
	}()
	Register(GeneratorKind{Section: "poisson", New: func() Generator { return new(PoissonSpec) }})
}
