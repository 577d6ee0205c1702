package scenario

import (
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func init() {
	Register(GeneratorKind{Section: "poisson", New: func() Generator { return new(PoissonSpec) }, Plain: true})
}

// PoissonSpec is the poisson section: independent arrivals at Rate over Keys keys.
type PoissonSpec struct {
	// Rate is requests per second over all keys.
	Rate float64 `yaml:"rate"`
	Keys int     `yaml:"keys"`
	// KeyPrefix names the keys KeyPrefix0, KeyPrefix1, ... (default "key-").
	KeyPrefix string `yaml:"key_prefix"`
	// Popularity is uniform (the default) or zipf, with exponent ZipfS (default 1.1).
	Popularity string  `yaml:"popularity"`
	ZipfS      float64 `yaml:"zipf_s"`
	Start      Offset  `yaml:"start"`
	End        Offset  `yaml:"end"`
	// Cost is each request's cost (default 1).
	Cost  *int64 `yaml:"cost"`
	Label string `yaml:"label"`
}

// Defaults sets the key prefix, the cost and, for zipf, the exponent.
func (p *PoissonSpec) Defaults() {
	p.KeyPrefix = orDefault(p.KeyPrefix, "key-")
	if p.Popularity == "zipf" && p.ZipfS == 0 {
		p.ZipfS = 1.1
	}
	if p.Cost == nil {
		p.Cost = ptr(int64(1))
	}
}

// Validate checks the rate, the keys, the popularity, the cost, the label and the span.
func (p *PoissonSpec) Validate(c *Check) error {
	if p.Rate <= 0 {
		return c.Fail("rate", "must be a positive number of requests per second, got %g", p.Rate)
	}
	if p.Keys <= 0 {
		return c.Fail("keys", "must be a positive number of keys, got %d", p.Keys)
	}
	switch p.Popularity {
	case "", "uniform":
	case "zipf":
		if p.ZipfS <= 1 {
			return c.Fail("zipf_s", "must be greater than 1, got %g", p.ZipfS)
		}
	default:
		return c.Fail("popularity", "unknown popularity %q (want uniform or zipf)", p.Popularity)
	}
	if err := c.Cost("cost", *p.Cost); err != nil {
		return err
	}
	if err := c.Label("label", p.Label); err != nil {
		return err
	}
	return c.Span("", p.Start, p.End)
}

// Last is the end, when set.
func (p *PoissonSpec) Last(epoch time.Time) time.Duration { return p.End.Resolve(epoch) }

// Sources is one Poisson source.
func (p *PoissonSpec) Sources(b *Build) []traffic.Source {
	class, _ := traffic.ParseClass(p.Label)
	start, end := b.Span(p.Start, p.End)
	pop := traffic.Uniform
	if p.Popularity == "zipf" {
		pop = traffic.Zipf
	}
	return []traffic.Source{traffic.NewPoisson(traffic.Poisson{
		Rate: p.Rate, Keys: p.Keys, KeyPrefix: p.KeyPrefix, Popularity: pop, ZipfS: p.ZipfS,
		Start: start, End: end, Cost: *p.Cost, Class: class,
	}, b.RNG)}
}

// Requests is the rate times the span.
func (p *PoissonSpec) Requests(b *Build) float64 { return p.Rate * seconds(b, p.Start, p.End) }

// Units is the requests times their cost.
func (p *PoissonSpec) Units(b *Build) float64 { return p.Requests(b) * float64(*p.Cost) }
