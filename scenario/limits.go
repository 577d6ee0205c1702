package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

// LimitSpec is one layer of the top-level limits section: a named limit on one key.
// Layers are checked in the order written, which should be narrowest first (the
// account's few login tries before the address's generous allowance); a request stops at
// the first layer that refuses it, and the refusal names that layer.
type LimitSpec struct {
	Name   string   `yaml:"name"`
	Key    string   `yaml:"key"`
	Limit  int64    `yaml:"limit"`
	Window Duration `yaml:"window"`
	Burst  int64    `yaml:"burst"`
	// Plans give keys on a plan (a tenant's pricing plan) their own quota; keys whose
	// plan is not listed use the layer's own limit.
	Plans []PlanSpec `yaml:"plans"`
}

// PlanSpec is a per-plan quota of a layer; a zero Window or Burst takes the layer's.
type PlanSpec struct {
	Name   string   `yaml:"name"`
	Limit  int64    `yaml:"limit"`
	Window Duration `yaml:"window"`
	Burst  int64    `yaml:"burst"`
}

// Policy is the layer's own limit for the algorithms package.
func (l LimitSpec) Policy() algorithms.Policy {
	return algorithms.Policy{Limit: l.Limit, Window: time.Duration(l.Window), Burst: l.Burst}
}

// Policy is the plan's quota for the algorithms package.
func (p PlanSpec) Policy() algorithms.Policy {
	return algorithms.Policy{Limit: p.Limit, Window: time.Duration(p.Window), Burst: p.Burst}
}

// ValidKey reports whether spec is a key kind scenarios and --key accept (user, ip,
// ipv6/N, xff:K, ...), with the reason when it is not.
func ValidKey(spec string) error {
	_, err := traffic.ParseKeyer(spec)
	return err
}

func (s *Scenario) validateLimits(file string) error {
	seen := map[string]bool{}
	for i, l := range s.Limits {
		f := fmt.Sprintf("limits[%d]", i)
		if l.Key == "" {
			return s.fail(file, f+".key", "is required")
		}
		if err := ValidKey(l.Key); err != nil {
			return s.fail(file, f+".key", "%v", err)
		}
		if seen[l.Name] {
			return s.fail(file, f+".name", "layer %q is named twice; give each layer its own name", l.Name)
		}
		seen[l.Name] = true
		if err := s.validatePolicy(file, f, PolicySpec{Limit: l.Limit, Window: l.Window, Burst: l.Burst}); err != nil {
			return err
		}
		plans := map[string]bool{}
		for j, p := range l.Plans {
			pf := fmt.Sprintf("%s.plans[%d]", f, j)
			if p.Name == "" {
				return s.fail(file, pf+".name", "is required")
			}
			if plans[p.Name] {
				return s.fail(file, pf+".name", "plan %q is listed twice", p.Name)
			}
			plans[p.Name] = true
			if err := s.validatePolicy(file, pf, PolicySpec{Limit: p.Limit, Window: p.Window, Burst: p.Burst}); err != nil {
				return err
			}
		}
	}
	return nil
}

// OverrideKey replaces the scenario's keying with one limit, its policy keyed on key (the
// layered limits are set aside): --key uses it to show what a different key does.
func (s *Scenario) OverrideKey(key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	if len(s.Limits) > 0 && s.Policy.Limit == 0 {
		l := s.Limits[0]
		s.Policy = PolicySpec{Limit: l.Limit, Window: l.Window, Burst: l.Burst}
	}
	s.Key = key
	s.Limits = nil
	return nil
}

// KeepLayers keeps only the named layers of the limits section, in their order.
func (s *Scenario) KeepLayers(names []string) error {
	if len(s.Limits) == 0 {
		return fmt.Errorf("scenario %s has no layered limits to choose from", s.Name)
	}
	var have []string
	for _, l := range s.Limits {
		have = append(have, l.Name)
	}
	for _, n := range names {
		if !slices.Contains(have, n) {
			return fmt.Errorf("scenario %s has no layer %q (it has %s)", s.Name, n, strings.Join(have, ", "))
		}
	}
	s.Limits = slices.DeleteFunc(s.Limits, func(l LimitSpec) bool { return !slices.Contains(names, l.Name) })
	return nil
}
