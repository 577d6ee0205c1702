package scenario

import (
	"path/filepath"
	"strings"
	"time"
)

// applyDefaults fills in what a decoded file leaves out, once, before validation: every
// default of the file format is set here or in a generator's Defaults, and nowhere else.
// The fleet's own defaults (balancer, placement, clock, lease, guard) are cluster.Config's.
func (s *Scenario) applyDefaults(file string) {
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(strings.TrimPrefix(file, "builtin:")), filepath.Ext(file))
	}
	for i := range s.Limits {
		l := &s.Limits[i]
		if l.Name == "" {
			l.Name = l.Key
		}
		for j := range l.Plans {
			if l.Plans[j].Window == 0 {
				l.Plans[j].Window = l.Window
			}
		}
	}
	if len(s.Limits) > 0 && s.Policy == (PolicySpec{}) {
		first := s.Limits[0]
		s.Policy = PolicySpec{Limit: first.Limit, Window: first.Window, Burst: first.Burst}
		s.policyFromLimits = true
	}
	if s.Key == "" {
		s.Key = "user"
	}
	if s.BackendWindow == 0 {
		s.BackendWindow = Duration(time.Second)
	}
	for _, t := range s.Traffic {
		if t.Spec != nil {
			t.Spec.Defaults()
		}
	}
	if c := s.Cluster; c != nil {
		if c.Nodes == nil {
			c.Nodes = ptr(1)
		}
		c.NonatomicKey = orDefault(c.NonatomicKey, "ttl-window")
		c.Store = orDefault(c.Store, "model")
		c.Prefix = orDefault(c.Prefix, "rlsim:")
	}
	for _, f := range s.Faults {
		if f.Spec != nil {
			f.Spec.Defaults()
		}
	}
	if s.Clients != nil {
		s.Clients.defaults()
	}
}
