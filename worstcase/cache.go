package worstcase

import "github.com/rlsim/rlsim/sim"

// Cache remembers the worst over_admission found per target, budget and seed, so that
// the scenarios of one run that share a policy search it once. A run owns its cache; the
// zero value is empty and ready. It is not safe for concurrent use.
type Cache struct {
	found map[cacheKey]float64
}

type cacheKey struct {
	target Target
	budget int
	seed   uint64
}

// OverAdmission is the worst over_admission the search finds for t with this budget,
// drawing from a random source seeded by seed (the run stream): from the cache when it
// was found before.
func (c *Cache) OverAdmission(t Target, budget int, seed uint64) (float64, error) {
	k := cacheKey{target: t, budget: budget, seed: seed}
	if v, ok := c.found[k]; ok {
		return v, nil
	}
	r, err := Search(t, budget, sim.NewRNG(seed, sim.RunStream))
	if err != nil {
		return 0, err
	}
	v := r.OverAdmission()
	if c.found == nil {
		c.found = map[cacheKey]float64{}
	}
	c.found[k] = v
	return v, nil
}
