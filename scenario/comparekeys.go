package scenario

import (
	"fmt"
	"slices"
)

// validateCompareKeys checks compare_keys: each a key ValidKey accepts, none twice and
// none the scenario's own key (which the chart shows anyway).
func (s *Scenario) validateCompareKeys(file string) error {
	for i, k := range s.CompareKeys {
		field := fmt.Sprintf("compare_keys[%d]", i)
		if err := ValidKey(k); err != nil {
			return s.fail(file, field, "%v", err)
		}
		if len(s.Limits) == 0 && k == s.Key {
			return s.fail(file, field, "%q is the scenario's own key; list only the others", k)
		}
		if slices.Contains(s.CompareKeys[:i], k) {
			return s.fail(file, field, "%q is listed twice", k)
		}
	}
	return nil
}

// WithKey returns a copy of the scenario keyed on key alone, for running the same
// traffic under another key. In a layered scenario, a layer keyed on key is kept alone
// with its own limit; otherwise the layers are set aside for the policy keyed on key. The
// receiver is not changed.
func (s *Scenario) WithKey(key string) (*Scenario, error) {
	c := *s
	for _, l := range s.Limits {
		if l.Key == key {
			c.Limits = []LimitSpec{l}
			return &c, nil
		}
	}
	c.Limits = nil
	if err := c.OverrideKey(key); err != nil {
		return nil, err
	}
	return &c, nil
}
