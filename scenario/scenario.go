// Package scenario is rlsim's scenario file: the types a file decodes into (strict YAML;
// every error names file:line:col and the field), its defaults (applied once, in
// defaults.go and each generator's Defaults), its validation (which changes nothing), the
// traffic generators that register their sections (generator.go, gen_*.go), and the
// built-in catalogue. Running a scenario is the run package's.
package scenario

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/scenarios"
	"github.com/rlsim/rlsim/sim"
)

// DefaultEpoch is the wall-clock time of t=0 unless a scenario sets its own: 10:00 on
// 2026-01-01 UTC, so that "10:00:59.900" is t=59.9s and fixed windows align on minutes.
var DefaultEpoch = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// KeyKinds are the identities a scenario can key its limit on, as help texts list them;
// ipv6/N takes any prefix length 0–128 and xff:K any number of trusted proxies 1–64
// (ValidKey decides).
var KeyKinds = []string{"user", "ip", "ipv6/N", "xff:K", "xff-leftmost", "account", "tenant", "api-key", "route"}

// Scenario is a decoded, validated scenario file.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Heavy marks a scenario too big for the default `rlsim compare` suite (a scale
	// test); it still runs when named.
	Heavy      bool       `yaml:"heavy"`
	Seed       *uint64    `yaml:"seed"`
	Epoch      *Epoch     `yaml:"epoch"`
	Duration   Duration   `yaml:"duration"`
	Policy     PolicySpec `yaml:"policy"`
	Algorithms []string   `yaml:"algorithms"`
	Key        string     `yaml:"key"`
	// Limits are layered limits, checked in order (narrowest first); when present they
	// replace policy and key.
	Limits []LimitSpec `yaml:"limits"`
	// Proxies is the number of trusted reverse proxies in front of the server; each
	// appends to X-Forwarded-For (see traffic.Network).
	Proxies int `yaml:"proxies"`
	// BackendWindow is the bin of backend_peak (default 1s).
	BackendWindow Duration      `yaml:"backend_window"`
	Traffic       []TrafficSpec `yaml:"traffic"`
	// Clients, when set, adds closed-loop clients that retry (see ClientsSpec).
	Clients *ClientsSpec `yaml:"clients"`
	// Cluster and Faults run the limit on a fleet of nodes (see cluster.go).
	Cluster *ClusterSpec `yaml:"cluster"`
	Faults  []FaultSpec  `yaml:"faults"`
	// CompareKeys are other keys the results folder's keying chart runs this scenario
	// with, beside its own key or layers (see comparekeys.go).
	CompareKeys []string `yaml:"compare_keys"`

	// Source is where the scenario came from: a file path, or "builtin:NAME".
	Source string `yaml:"-"`
	// Text is the file as read.
	Text string `yaml:"-"`

	positions *places
	// policyFromLimits says the file has no policy section and Policy is the first
	// layer's limit.
	policyFromLimits bool
}

// PolicySpec is the advertised policy as written in a file.
type PolicySpec struct {
	Limit  int64    `yaml:"limit"`
	Window Duration `yaml:"window"`
	Burst  int64    `yaml:"burst"`
}

// Policy converts the spec for the algorithms package.
func (p PolicySpec) Policy() algorithms.Policy {
	return algorithms.Policy{Limit: p.Limit, Window: time.Duration(p.Window), Burst: p.Burst}
}

// Duration is a time.Duration written as Go writes it ("1m", "59.9s", "250ms").
type Duration time.Duration

// UnmarshalText reads the duration from its text in a scenario file.
func (d *Duration) UnmarshalText(text []byte) error {
	s := string(text)
	v, err := parseDuration(s)
	*d = Duration(v)
	return err
}

func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 1m, 59.9s or 250ms, got %q", s)
	}
	return v, nil
}

// Offset is a point in the scenario's time: a duration since the start ("59.9s") or a
// wall-clock time of day on the epoch's date ("10:00:59.900").
type Offset struct {
	D     time.Duration
	Clock bool
	Set   bool
}

// UnmarshalText reads the offset from its text in a scenario file.
func (o *Offset) UnmarshalText(text []byte) error {
	s := string(text)
	o.Set = true
	if strings.Contains(s, ":") {
		t, err := time.Parse("15:04:05.999999999", s)
		if err != nil {
			return fmt.Errorf("want a duration since the start (59.9s) or a time of day (10:00:59.900), got %q", s)
		}
		o.Clock = true
		o.D = time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
			time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
		return nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration since the start (59.9s) or a time of day (10:00:59.900), got %q", s)
	}
	o.D = d
	return nil
}

// Resolve returns the offset from the start for a scenario whose t=0 is epoch.
func (o Offset) Resolve(epoch time.Time) time.Duration {
	if !o.Clock {
		return o.D
	}
	midnight := time.Date(epoch.Year(), epoch.Month(), epoch.Day(), 0, 0, 0, 0, epoch.Location())
	return midnight.Add(o.D).Sub(epoch)
}

// Epoch is the wall-clock time of t=0, written in RFC 3339.
type Epoch time.Time

// UnmarshalText reads the epoch from its text in a scenario file.
func (e *Epoch) UnmarshalText(text []byte) error {
	s := string(text)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time such as 2026-01-01T10:00:00Z, got %q", s)
	}
	*e = Epoch(t)
	return nil
}

// EpochTime is the scenario's t=0 on the wall clock.
func (s *Scenario) EpochTime() time.Time {
	if s.Epoch != nil {
		return time.Time(*s.Epoch)
	}
	return DefaultEpoch
}

// SeedOr returns the scenario's seed, or def when the file sets none.
func (s *Scenario) SeedOr(def uint64) uint64 {
	if s.Seed != nil {
		return *s.Seed
	}
	return def
}

// Parse decodes a scenario file's bytes, applies its defaults and validates it; file
// names it in errors.
func Parse(file string, data []byte) (*Scenario, error) {
	return parse(file, string(data))
}

// parse is Parse of the file's text, which the strings decoded from it share.
func parse(file, text string) (*Scenario, error) {
	return parseWith(file, text, true)
}

// parseWith is parse, reading the lists written one mapping per line line by line when
// streams is set, and as part of the tree when not (which reads the same, slower).
func parseWith(file, text string, streams bool) (*Scenario, error) {
	sc := &Scenario{}
	pos, err := decodeYAML(file, text, sc, streams)
	if err != nil {
		return nil, err
	}
	sc.positions = pos
	sc.Source = file
	sc.Text = text
	sc.applyDefaults(file)
	if err := sc.validate(file); err != nil {
		return nil, err
	}
	return sc, nil
}

// Load reads a scenario by built-in name or by file path. A name with a path separator or a
// .yaml/.yml suffix is a file; anything else is looked up in the catalogue first.
func Load(nameOrFile string) (*Scenario, error) {
	looksLikeFile := strings.ContainsRune(nameOrFile, os.PathSeparator) ||
		strings.HasSuffix(nameOrFile, ".yaml") || strings.HasSuffix(nameOrFile, ".yml")
	if !looksLikeFile {
		if data, err := scenarios.FS.ReadFile(nameOrFile + ".yaml"); err == nil {
			sc, err := Parse("builtin:"+nameOrFile, data)
			if err != nil {
				return nil, err
			}
			return sc, nil
		}
		if _, err := os.Stat(nameOrFile); err != nil {
			return nil, fmt.Errorf("scenario %q: %w", nameOrFile, ErrUnknownScenario)
		}
	}
	text, err := readFile(nameOrFile)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", nameOrFile, unwrapPathError(err))
	}
	return parse(nameOrFile, text)
}

// readFile reads a scenario file into one string, and no more of it than one byte past
// MaxFileBytes, which is enough for Parse to refuse it.
func readFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		b.Grow(int(min(st.Size(), MaxFileBytes+1)))
	}
	_, err = io.Copy(&b, io.LimitReader(f, MaxFileBytes+1))
	return b.String(), err
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// Builtins lists the catalogue's scenario names in sorted order.
func Builtins() []string {
	entries, _ := scenarios.FS.ReadDir(".")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

func (s *Scenario) fail(file, field, format string, args ...any) error {
	e := &PositionError{File: file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if p := s.positions.at(field); p != nil {
		e.Line, e.Column = p.Line, p.Column
	} else if field != "" {
		// A missing field: point at its parent, the closest thing that exists.
		parent := field
		for parent != "" {
			i := strings.LastIndexAny(parent, ".[")
			if i < 0 {
				parent = ""
				break
			}
			parent = parent[:i]
			if p := s.positions.at(parent); p != nil {
				e.Line, e.Column = p.Line, p.Column
				break
			}
		}
		if parent == "" {
			e.Line, e.Column = 1, 1
		}
	}
	return e
}

// validate reports the first thing wrong with a decoded scenario whose defaults are
// applied. It changes nothing.
func (s *Scenario) validate(file string) error {
	if s.Duration < 0 {
		return s.fail(file, "duration", "must not be negative")
	}
	if !s.policyFromLimits {
		if err := s.validatePolicy(file, "policy", s.Policy); err != nil {
			return err
		}
	}
	if err := s.validateLimits(file); err != nil {
		return err
	}
	if s.Proxies < 0 || s.Proxies > 64 {
		return s.fail(file, "proxies", "must be a number of trusted proxies from 0 to 64, got %d", s.Proxies)
	}
	for i, a := range s.Algorithms {
		spec, err := algorithms.Parse(a)
		if err != nil {
			return s.fail(file, fmt.Sprintf("algorithms[%d]", i), "%v", err)
		}
		s.Algorithms[i] = spec.Text
	}
	if s.positions.at("key") != nil && len(s.Limits) > 0 {
		return s.fail(file, "key", "is set aside by limits; give each layer its key")
	}
	if err := ValidKey(s.Key); err != nil {
		return s.fail(file, "key", "%v", err)
	}
	if s.BackendWindow < 0 {
		return s.fail(file, "backend_window", "must be positive")
	}
	if err := s.validateCompareKeys(file); err != nil {
		return err
	}
	if len(s.Traffic) == 0 && s.Clients == nil {
		return s.fail(file, "traffic", "a scenario needs at least one traffic source or a clients section")
	}
	if err := s.validateCluster(file); err != nil {
		return err
	}
	epoch := s.EpochTime()
	if s.Epoch != nil {
		if err := sim.CheckTime(epoch); err != nil {
			return s.fail(file, "epoch", "%v", err)
		}
	}
	if s.Clients != nil {
		if err := s.validateClients(file, epoch); err != nil {
			return err
		}
	}
	if err := s.validateTraffic(file, epoch); err != nil {
		return err
	}
	return s.validateClock(file, epoch)
}

// validateClock reports a run the virtual clock cannot place (sim.CheckRun): from the
// epoch to the horizon, with room for the longest window of the scenario on either side.
func (s *Scenario) validateClock(file string, epoch time.Time) error {
	w := time.Duration(s.Policy.Window)
	for _, l := range s.Limits {
		w = max(w, time.Duration(l.Window))
		for _, p := range l.Plans {
			w = max(w, time.Duration(p.Window))
		}
	}
	field := "duration"
	if s.Duration == 0 {
		field = "traffic"
	}
	if s.Epoch != nil {
		field = "epoch"
	}
	h := s.Horizon()
	if h < 0 {
		return s.fail(file, field, "the traffic runs past what the virtual clock counts (%s)", time.Duration(math.MaxInt64))
	}
	if err := sim.CheckRun(epoch, h, w); err != nil {
		return s.fail(file, field, "%v", err)
	}
	return nil
}

func (s *Scenario) validatePolicy(file, field string, p PolicySpec) error {
	if p.Limit <= 0 {
		return s.fail(file, field+".limit", "must be a positive number of units, got %d", p.Limit)
	}
	if p.Window <= 0 {
		return s.fail(file, field+".window", "must be a positive duration, got %s", time.Duration(p.Window))
	}
	if err := sim.CheckWindow(time.Duration(p.Window)); err != nil {
		return s.fail(file, field+".window", "%v", err)
	}
	if p.Limit > algorithms.MaxUnits {
		return s.fail(file, field+".limit", "must be at most %d (2^52), got %d", int64(algorithms.MaxUnits), p.Limit)
	}
	if p.Burst < 0 {
		return s.fail(file, field+".burst", "must not be negative, got %d", p.Burst)
	}
	if p.Burst > algorithms.MaxUnits {
		return s.fail(file, field+".burst", "must be at most %d (2^52), got %d", int64(algorithms.MaxUnits), p.Burst)
	}
	// An absent burst is the limit; a burst of 0 written out would silently be the limit
	// too, which is not what it says.
	if s.positions.at(field+".burst") != nil && p.Burst == 0 {
		return s.fail(file, field+".burst", "must be at least 1 (leave burst out for a burst equal to the limit)")
	}
	return nil
}

// Horizon is the time the run stops: the scenario's duration, or the last scripted
// arrival and generator end plus one window when it sets none.
func (s *Scenario) Horizon() time.Duration {
	if s.Duration > 0 {
		return time.Duration(s.Duration)
	}
	epoch := s.EpochTime()
	var last time.Duration
	for _, t := range s.Traffic {
		last = max(last, t.Spec.Last(epoch))
	}
	return last + time.Duration(s.Policy.Window)
}

// DefaultSeed seeds a run whose scenario and command line set no seed.
const DefaultSeed = 1
