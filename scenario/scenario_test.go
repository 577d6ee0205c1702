package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBadScenariosNameFileLineColumnAndField(t *testing.T) {
	tests := []struct {
		file string
		want string // the whole one-line error
	}{
		{"unknown-field.yaml", "testdata/bad/unknown-field.yaml:6:36: traffic[0].script[0].colour: unknown field (known: at, cost, count, key, label, spread)"},
		{"negative-limit.yaml", "testdata/bad/negative-limit.yaml:4:10: policy.limit: must be a positive number of units, got -5"},
		{"zero-window.yaml", "testdata/bad/zero-window.yaml:3:30: policy.window: must be a positive duration, got 0s"},
		{"negative-count.yaml", "testdata/bad/negative-count.yaml:7:33: traffic[0].script[1].count: must be between 0 and 4294967296, got -1"},
		{"duplicate-key.yaml", "testdata/bad/duplicate-key.yaml:4:1: YAML syntax error: mapping key \"duration\" already defined at [2:1]"},
		{"wrong-type.yaml", `testdata/bad/wrong-type.yaml:3:17: policy.limit: want an integer, got a string "lots"`},
		{"bad-duration.yaml", `testdata/bad/bad-duration.yaml:3:29: policy.window: want a duration such as 1m, 59.9s or 250ms, got "1 minute"`},
		{"overflow.yaml", "testdata/bad/overflow.yaml:3:17: policy.limit: must be at most 4503599627370496 (2^52), got 6000000000000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", "bad", tt.file))
			if err == nil {
				t.Fatal("loaded without error")
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestSyntaxErrorIsOneLineWithPosition(t *testing.T) {
	_, err := Load("testdata/bad/syntax.yaml")
	if err == nil {
		t.Fatal("loaded without error")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "testdata/bad/syntax.yaml:") || !strings.Contains(msg, "YAML syntax error") {
		t.Fatalf("error = %q, want one line naming the file, line:col and the syntax error", msg)
	}
	var pe *PositionError
	if !asPositionError(err, &pe) || pe.Line == 0 {
		t.Fatalf("error %v carries no line", err)
	}
}

func asPositionError(err error, target **PositionError) bool {
	pe, ok := err.(*PositionError)
	*target = pe
	return ok
}

func TestMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-file.yaml")
	if err == nil || err.Error() != "scenario testdata/no-such-file.yaml: no such file or directory" {
		t.Fatalf("err = %v", err)
	}
	_, err = Load("no-such-builtin")
	if err == nil || !strings.Contains(err.Error(), `"no-such-builtin"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestBuiltinsParse(t *testing.T) {
	names := Builtins()
	if len(names) < 4 {
		t.Fatalf("builtins = %v", names)
	}
	for _, n := range names {
		sc, err := Load(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if sc.Name != n {
			t.Errorf("%s: name field %q differs from the file name", n, sc.Name)
		}
		if sc.Description == "" || strings.Contains(sc.Description, "\n") {
			t.Errorf("%s: want a one-line description, got %q", n, sc.Description)
		}
	}
}

func TestClockTimesResolveAgainstTheEpoch(t *testing.T) {
	sc, err := Load("boundary-burst")
	if err != nil {
		t.Fatal(err)
	}
	script := *sc.Traffic[0].Spec.(*ScriptSpec)
	got := []time.Duration{
		script[0].At.Resolve(sc.EpochTime()),
		script[1].At.Resolve(sc.EpochTime()),
	}
	if got[0] != 59900*time.Millisecond || got[1] != 60100*time.Millisecond {
		t.Fatalf("at = %v, want [59.9s 1m0.1s]", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range Builtins() {
		sc, err := Load(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(sc.Text))
	}
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, p := range bad {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("fuzz.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if sc.Policy.Limit <= 0 || sc.Policy.Window <= 0 || (len(sc.Traffic) == 0 && sc.Clients == nil) {
			t.Fatalf("accepted an invalid scenario: %+v", sc)
		}
	})
}

// go-yaml's strict mode alone would truncate 1.5 into an integer, read a quoted "5" as a
// number, take null as zero, resolve anchors and tags, and turn an unquoted 007 into the
// text "7"; the walk before it refuses each, naming the place and the field.
func TestStrictBeyondTheLibrary(t *testing.T) {
	tests := []struct{ policy, key, want string }{
		{"{limit: 1.5, window: 1m}", "u", `t.yaml:2:17: policy.limit: want an integer, got a number "1.5"`},
		{`{limit: "5", window: 1m}`, "u", `t.yaml:2:17: policy.limit: want an integer, got a string "5"`},
		{"{limit: 5, window: }", "u", "policy.window: a value is required"},
		{"{limit: 5, window: 1m}", "&k u", "anchors, aliases and merge keys are not supported"},
		{"{limit: 5, window: 1m}", "!!str u", "YAML tags are not supported"},
		{"{limit: 5, window: 1m}", "007", `t.yaml:5:23: traffic[0].script[0].key: YAML reads 007 as an integer "7"; quote it to mean the text`},
		{"{limit: 5, window: 1m}", "1.50", `traffic[0].script[0].key: YAML reads 1.50 as a number "1.5"`},
		{"{limit: 5, window: 1m}", `"007"`, ""},
		{"{limit: 5, window: 1m}", "8812", ""},
	}
	for _, tt := range tests {
		body := "duration: 1m\npolicy: " + tt.policy + "\ntraffic:\n  - script:\n      - {at: 1s, key: " + tt.key + "}\n"
		sc, err := Parse("t.yaml", []byte(body))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s / %s: %v", tt.policy, tt.key, err)
		case tt.want == "":
			if key := (*sc.Traffic[0].Spec.(*ScriptSpec))[0].Key; key != strings.Trim(tt.key, `"`) {
				t.Errorf("key %q, want %s", key, tt.key)
			}
		case err == nil || !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s / %s: error %v, want %s", tt.policy, tt.key, err, tt.want)
		}
	}
}

// Times and windows the virtual clock cannot hold, and an explicit burst of 0, are one
// error each, naming the file, the place and the field; the values just inside pass.
func TestEdgeValuesTheClockCannotHold(t *testing.T) {
	const traffic = "traffic:\n  - script:\n      - {at: 1s, key: u}\n"
	tests := []struct{ head, want string }{
		{"policy: {limit: 5, window: 100000h}\n", ""},
		{"policy: {limit: 5, window: 100000h0m0.000000001s}\n", "e.yaml:1:28: policy.window: 100000h0m0.000000001s is longer than the longest window the virtual clock handles, 100000h0m0s (about 11 years)"},
		{"policy: {limit: 5, window: 500000h}\n", "policy.window: 500000h0m0s is longer than the longest window"},
		{"limits:\n  - {key: ip, limit: 5, window: 600000h}\n", "limits[0].window: 600000h0m0s is longer than the longest window"},
		{"policy: {limit: 5, window: 1m, burst: 0}\n", "e.yaml:1:39: policy.burst: must be at least 1 (leave burst out for a burst equal to the limit)"},
		{"policy: {limit: 5, window: 1m, burst: 1}\n", ""},
		{"limits:\n  - {key: ip, limit: 5, window: 1m, burst: 0}\n", "limits[0].burst: must be at least 1"},
		{"epoch: 1678-01-01T00:10:00Z\npolicy: {limit: 5, window: 1m}\n", ""},
		{"epoch: 1677-12-31T23:59:59Z\npolicy: {limit: 5, window: 1m}\n", "e.yaml:1:8: epoch: 1677-12-31T23:59:59Z is outside the years the virtual clock counts (1678 to 2261"},
		{"epoch: 1678-01-01T00:04:00Z\npolicy: {limit: 5, window: 1m}\n", "epoch: starting at 1678-01-01T00:04:00Z, 5 windows of 1m0s before it fall before 1678"},
		{"epoch: 2262-06-01T00:00:00Z\npolicy: {limit: 5, window: 1m}\n", "epoch: 2262-06-01T00:00:00Z is outside the years"},
		{"epoch: 2261-12-31T23:00:00Z\nduration: 2h\npolicy: {limit: 5, window: 1m}\n", "epoch: starting at 2261-12-31T23:00:00Z, 2h0m0s and 5 windows of 1m0s after it reach past 2261"},
		{"duration: 2500000h\npolicy: {limit: 5, window: 1m}\n", "duration: starting at 2026-01-01T10:00:00Z, 2500000h0m0s and 5 windows of 1m0s after it reach past 2261"},
	}
	for _, tt := range tests {
		_, err := Parse("e.yaml", []byte(tt.head+traffic))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.head, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: error %v\nwant %s", tt.head, err, tt.want)
		}
	}
}

// Limits, bursts, costs and a run's units beyond what the counters hold exactly are one
// error each, naming the place and the field; the values at the bounds pass.
func TestUnitsBeyondTheCountersAreRefused(t *testing.T) {
	script := func(lines ...string) string {
		return "traffic:\n  - script:\n" + strings.Join(lines, "")
	}
	policy := "duration: 1m\npolicy: {limit: 5, window: 1m}\n"
	tests := []struct{ text, want string }{
		{"duration: 1m\npolicy: {limit: 6000000000000000000, window: 1m}\n" + script("      - {at: 0s, count: 2, key: a, cost: 5000000000000000000}\n"),
			"u.yaml:2:17: policy.limit: must be at most 4503599627370496 (2^52), got 6000000000000000000"},
		{"duration: 1m\npolicy: {limit: 4503599627370496, window: 1m, burst: 4503599627370496}\n" + script("      - {at: 0s, key: a}\n"), ""},
		{"duration: 1m\npolicy: {limit: 5, window: 1m, burst: 4503599627370497}\n" + script("      - {at: 0s, key: a}\n"),
			"u.yaml:2:39: policy.burst: must be at most 4503599627370496 (2^52), got 4503599627370497"},
		{"duration: 1m\nlimits:\n  - {key: ip, limit: 5, window: 1m}\n  - {key: user, limit: 4503599627370497, window: 1m}\n" + script("      - {at: 0s, key: a}\n"),
			"u.yaml:4:24: limits[1].limit: must be at most 4503599627370496 (2^52)"},
		{"duration: 1m\nlimits:\n  - key: ip\n    limit: 5\n    window: 1m\n    plans: [{name: gold, limit: 9007199254740992}]\n" + script("      - {at: 0s, key: a}\n"),
			"u.yaml:6:33: limits[0].plans[0].limit: must be at most 4503599627370496 (2^52)"},
		{policy + script("      - {at: 0s, key: a, cost: 4294967296}\n"), ""},
		{policy + script("      - {at: 0s, key: a}\n", "      - {at: 0s, key: a, cost: 4294967297}\n"),
			"u.yaml:6:32: traffic[0].script[1].cost: must be at most 4294967296 (2^32), got 4294967297"},
		{policy + "traffic:\n  - poisson: {rate: 1, keys: 2, cost: 4294967297}\n",
			"u.yaml:4:39: traffic[0].poisson.cost: must be at most 4294967296 (2^32)"},
		{policy + "traffic:\n  - cost-weighted:\n      users: 2\n      rate_per_user: 1\n      routes: [{route: GET /a, cost: 5000000000, share: 1}]\n",
			"u.yaml:7:38: traffic[0].cost-weighted.routes[0].cost: must be at most 4294967296 (2^32)"},
		{policy + script("      - {at: 0s, key: a, count: 4294967296, cost: 1073741824}\n"), ""},
		{policy + script("      - {at: 0s, key: a, count: 4294967296, cost: 1073741824}\n", "      - {at: 1s, key: b, count: 4294967296}\n"),
			"u.yaml:6:33: traffic[0].script[1].count: brings the script to 4.61e+18 units (requests × cost), more than the 4.61e+18 (2^62) a run counts"},
		{"duration: 1000000h\npolicy: {limit: 5, window: 1m}\ntraffic:\n  - poisson: {rate: 1000000, keys: 2, cost: 4294967296}\n",
			"u.yaml:4:14: traffic[0].poisson: with this section the run sends about 1.55e+25 units (requests × cost), more than the 4.61e+18 (2^62) a run counts"},
		{"duration: 10h\npolicy: {limit: 5, window: 1m}\ntraffic:\n  - poisson: {rate: 20000, keys: 2, cost: 4294967296}\n  - poisson: {rate: 20000, keys: 2, cost: 4294967296}\n",
			"u.yaml:5:14: traffic[1].poisson: with this section the run sends about 6.18e+18 units"},
	}
	for _, tt := range tests {
		_, err := Parse("u.yaml", []byte(tt.text))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.text, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%q: error %v\nwant %s…", tt.text, err, tt.want)
		}
	}
}
