package scenario

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func init() {
	Register(GeneratorKind{Section: "tenants", New: func() Generator { return new(TenantsSpec) }})
}

// TenantsSpec is the tenants section: one crowd of users per tenant, each tenant on a
// plan that layered limits can give its own quota.
type TenantsSpec []TenantSpec

// TenantSpec is one tenant of the tenants section. Its users are named
// "<name>/user-0", ..., one address each from 172.(16+i%16).0.1 for the i-th tenant
// unless the pool says otherwise.
type TenantSpec struct {
	Name string `yaml:"name"`
	// Plan is the tenant's pricing plan (default "default").
	Plan        string  `yaml:"plan"`
	Users       int     `yaml:"users"`
	RatePerUser float64 `yaml:"rate_per_user"`
	PoolSpec    `yaml:",inline"`
	Start       Offset `yaml:"start"`
	End         Offset `yaml:"end"`
	// Label is legit, or attacker for a misbehaving tenant (reported as one campaign
	// named after the tenant).
	Label string `yaml:"label"`
}

// Defaults puts every tenant without a plan on the default plan.
func (t *TenantsSpec) Defaults() {
	for i := range *t {
		(*t)[i].Plan = orDefault((*t)[i].Plan, "default")
	}
}

// Validate checks every tenant: a name, and its crowd.
func (t *TenantsSpec) Validate(c *Check) error {
	for i, tn := range *t {
		f := fmt.Sprintf("[%d].", i)
		if tn.Name == "" {
			return c.Fail(f+"name", "is required")
		}
		if err := c.crowd(f, tn.Users, tn.RatePerUser, tn.PoolSpec, tn.Start, tn.End, tn.Label); err != nil {
			return err
		}
	}
	return nil
}

// Last is the latest end of a tenant.
func (t *TenantsSpec) Last(epoch time.Time) time.Duration {
	var last time.Duration
	for _, tn := range *t {
		last = max(last, tn.End.Resolve(epoch))
	}
	return last
}

// Sources is one crowd per tenant.
func (t *TenantsSpec) Sources(b *Build) []traffic.Source {
	out := make([]traffic.Source, 0, len(*t))
	for i, tn := range *t {
		start, end := b.Span(tn.Start, tn.End)
		base := netip.AddrFrom4([4]byte{172, 16 + byte(i%16), 0, 1}).String()
		class := classOf(tn.Label)
		actor := ""
		if class == traffic.Attacker {
			actor = tn.Name // a misbehaving tenant is one campaign, not many users
		}
		out = append(out, traffic.NewCrowd(traffic.Crowd{
			Actor: actor,
			Users: tn.Users, RatePerUser: tn.RatePerUser, Addrs: tn.Addrs(tn.Users, base),
			UserPrefix: tn.Name + "/user-", Tenant: tn.Name, Plan: tn.Plan,
			Start: start, End: end, Class: class,
			Label: fmt.Sprintf("tenant %s (%s): %d users at %g/s", tn.Name, tn.Plan, tn.Users, tn.RatePerUser),
		}, b.RNG))
	}
	return out
}

// Requests is every tenant's users' rate times its span.
func (t *TenantsSpec) Requests(b *Build) float64 {
	var n float64
	for _, tn := range *t {
		n += float64(tn.Users) * tn.RatePerUser * seconds(b, tn.Start, tn.End)
	}
	return n
}
