package scenario

import (
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func init() {
	Register(GeneratorKind{Section: "page-load", New: func() Generator { return new(PageLoadSpec) }})
}

// PageLoadSpec is the page-load section: browsing users whose page views fan out.
type PageLoadSpec struct {
	Users int `yaml:"users"`
	// Fanout is the requests of one page view (default 8), spread over Spread (50ms).
	Fanout int      `yaml:"fanout"`
	Spread Duration `yaml:"spread"`
	// Interactions are the bursts of InteractionSize requests (default 2 of 4) a view
	// leads to, InteractionGap apart (500ms); Think is the pause between views (10s).
	Interactions    *int     `yaml:"interactions"`
	InteractionSize int      `yaml:"interaction_size"`
	InteractionGap  Duration `yaml:"interaction_gap"`
	Think           Duration `yaml:"think"`
	// UserPrefix names the users (default "user-").
	UserPrefix string `yaml:"user_prefix"`
	PoolSpec   `yaml:",inline"`
	Start      Offset `yaml:"start"`
	End        Offset `yaml:"end"`
	Label      string `yaml:"label"`
}

// Defaults sets the fan-out, the interactions, the pauses and the user prefix.
func (p *PageLoadSpec) Defaults() {
	if p.Fanout == 0 {
		p.Fanout = 8
	}
	if p.InteractionSize == 0 {
		p.InteractionSize = 4
	}
	if p.Interactions == nil {
		p.Interactions = ptr(2)
	}
	for _, d := range []struct {
		v   *Duration
		def time.Duration
	}{{&p.Spread, 50 * time.Millisecond}, {&p.InteractionGap, 500 * time.Millisecond}, {&p.Think, 10 * time.Second}} {
		if *d.v == 0 {
			*d.v = Duration(d.def)
		}
	}
	p.UserPrefix = orDefault(p.UserPrefix, "user-")
}

// Validate checks the counts, the pauses, the pool, the span and the label.
func (p *PageLoadSpec) Validate(c *Check) error {
	for _, n := range []struct {
		name string
		v    int
	}{{"users", p.Users}, {"fanout", p.Fanout}, {"interaction_size", p.InteractionSize}} {
		if err := c.Count(n.name, n.v); err != nil {
			return err
		}
	}
	if *p.Interactions < 0 || *p.Interactions > 1000 {
		return c.Fail("interactions", "must be between 0 and 1000, got %d", *p.Interactions)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"spread", p.Spread}, {"interaction_gap", p.InteractionGap}, {"think", p.Think}} {
		if d.v < 0 {
			return c.Fail(d.name, "must not be negative")
		}
	}
	if err := c.Pool("", p.PoolSpec); err != nil {
		return err
	}
	if err := c.Span("", p.Start, p.End); err != nil {
		return err
	}
	return c.Label("label", p.Label)
}

// Last is the end, when set.
func (p *PageLoadSpec) Last(epoch time.Time) time.Duration { return p.End.Resolve(epoch) }

// Sources is one page-load source; its page ids are numbered apart from other entries'.
func (p *PageLoadSpec) Sources(b *Build) []traffic.Source {
	start, end := b.Span(p.Start, p.End)
	return []traffic.Source{traffic.NewPageLoad(traffic.PageLoad{
		Users: p.Users, Fanout: p.Fanout, Spread: time.Duration(p.Spread), Interactions: *p.Interactions,
		InteractionSize: p.InteractionSize, InteractionGap: time.Duration(p.InteractionGap), Think: time.Duration(p.Think),
		Addrs: p.Addrs(p.Users, "198.18.0.1"), UserPrefix: p.UserPrefix,
		Start: start, End: end, Class: classOf(p.Label), IDBase: uint64(b.Entry) << 40,
	}, b.RNG)}
}

// Requests is every user's page views over the span, each its fan-out and its
// interactions' requests, a view taking the think time and the interactions' gaps.
func (p *PageLoadSpec) Requests(b *Build) float64 {
	perView := float64(p.Fanout + *p.Interactions*p.InteractionSize)
	cycle := time.Duration(p.Think) + time.Duration(*p.Interactions)*time.Duration(p.InteractionGap)
	if cycle <= 0 {
		return 0
	}
	return float64(p.Users) * perView * seconds(b, p.Start, p.End) / cycle.Seconds()
}
