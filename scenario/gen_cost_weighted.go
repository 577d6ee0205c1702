package scenario

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func init() {
	Register(GeneratorKind{Section: "cost-weighted", New: func() Generator { return new(CostWeightedSpec) }})
}

// RouteSpec is one endpoint of cost-weighted traffic: its name, what one call costs and
// its share of the calls.
type RouteSpec struct {
	Route string  `yaml:"route"`
	Cost  int64   `yaml:"cost"`
	Share float64 `yaml:"share"`
}

// CostWeightedSpec is the cost-weighted section: users calling endpoints of different
// costs (default: a cheap list at 95%, a report costing 20 at 5%). Users are named
// UserPrefix0, ... (default "user-"), one address each from 198.19.0.1 unless the pool
// says otherwise.
type CostWeightedSpec struct {
	// Actor names the users when they are labelled attacker (default "cost-weighted").
	Actor       string      `yaml:"actor"`
	Users       int         `yaml:"users"`
	RatePerUser float64     `yaml:"rate_per_user"`
	Routes      []RouteSpec `yaml:"routes"`
	UserPrefix  string      `yaml:"user_prefix"`
	PoolSpec    `yaml:",inline"`
	Start       Offset `yaml:"start"`
	End         Offset `yaml:"end"`
	Label       string `yaml:"label"`
}

// Defaults sets the campaign's name, the routes and the user prefix.
func (w *CostWeightedSpec) Defaults() {
	w.Actor = orDefault(w.Actor, "cost-weighted")
	if len(w.Routes) == 0 {
		w.Routes = []RouteSpec{{Route: "GET /list", Cost: 1, Share: 0.95}, {Route: "POST /report", Cost: 20, Share: 0.05}}
	}
	w.UserPrefix = orDefault(w.UserPrefix, "user-")
}

// Validate checks the users, their rate, every route, the pool, the span and the label.
func (w *CostWeightedSpec) Validate(c *Check) error {
	if err := c.Count("users", w.Users); err != nil {
		return err
	}
	if err := c.Rate("rate_per_user", w.RatePerUser); err != nil {
		return err
	}
	if err := c.CrowdRate("rate_per_user", w.Users, w.RatePerUser); err != nil {
		return err
	}
	for i, r := range w.Routes {
		rf := fmt.Sprintf("routes[%d].", i)
		if r.Route == "" {
			return c.Fail(rf+"route", "is required")
		}
		if err := c.Cost(rf+"cost", r.Cost); err != nil {
			return err
		}
		if !(r.Share > 0) {
			return c.Fail(rf+"share", "must be positive, got %g", r.Share)
		}
	}
	if err := c.Pool("", w.PoolSpec); err != nil {
		return err
	}
	if err := c.Span("", w.Start, w.End); err != nil {
		return err
	}
	return c.Label("label", w.Label)
}

// Last is the end, when set.
func (w *CostWeightedSpec) Last(epoch time.Time) time.Duration { return w.End.Resolve(epoch) }

// Sources is one crowd calling the routes.
func (w *CostWeightedSpec) Sources(b *Build) []traffic.Source {
	start, end := b.Span(w.Start, w.End)
	routes := make([]traffic.Route, len(w.Routes))
	for i, r := range w.Routes {
		routes[i] = traffic.Route{Name: r.Route, Cost: r.Cost, Share: r.Share}
	}
	return []traffic.Source{traffic.NewCrowd(traffic.Crowd{
		Actor: campaign(w.Label, w.Actor),
		Users: w.Users, RatePerUser: w.RatePerUser, Addrs: w.Addrs(w.Users, "198.19.0.1"), UserPrefix: w.UserPrefix,
		Routes: routes, Start: start, End: end, Class: classOf(w.Label),
		Label: fmt.Sprintf("cost-weighted: %d %s* users at %g/s over %d routes", w.Users, w.UserPrefix, w.RatePerUser, len(routes)),
	}, b.RNG)}
}

// Requests is every user's rate times the span.
func (w *CostWeightedSpec) Requests(b *Build) float64 {
	return float64(w.Users) * w.RatePerUser * seconds(b, w.Start, w.End)
}

// Units is the requests times the routes' costs, weighed by their shares.
func (w *CostWeightedSpec) Units(b *Build) float64 {
	var cost, shares float64
	for _, r := range w.Routes {
		cost += r.Share * float64(r.Cost)
		shares += r.Share
	}
	return w.Requests(b) * cost / shares
}
