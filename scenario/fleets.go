package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/cluster"
)

// Fleet is one fleet a cluster scenario runs: its variant's name ("" without variants)
// and its configuration, the fleet's defaults not yet applied (cluster.Config.
// WithDefaults). The run builds its fleets from these, and validation checks these with
// cluster.Config.Validate, so what is checked is what runs.
type Fleet struct {
	Name   string
	Config cluster.Config

	variant int // the variant's index, -1 for the section as written
	// from is, per list of Config ("outages", "failovers", "reshards"), the path in the
	// file of each entry, and per scalar a fault set ("latency"), that fault's field.
	from map[string][]string
}

// Fleets builds the fleets of the cluster section in file order: one per variant, or the
// section as written when it has none. The scenario must have a cluster section.
func (s *Scenario) Fleets() []Fleet {
	base := s.baseFleet()
	if len(s.Cluster.Variants) == 0 {
		return []Fleet{base}
	}
	var out []Fleet
	for i, v := range s.Cluster.Variants {
		out = append(out, base.withVariant(i, v))
	}
	return out
}

// baseFleet is the cluster section with its faults, before any variant.
func (s *Scenario) baseFleet() Fleet {
	c := s.Cluster
	epoch := s.EpochTime()
	base := cluster.Config{
		Nodes: *c.Nodes, Balancer: c.Balancer, Placement: c.Placement, LocalRecompute: c.LocalRecompute,
		Lease: c.Lease, LeaseTTL: time.Duration(c.LeaseTTL), TTLWindowKey: c.NonatomicKey == "ttl-window",
		Clock: c.Clock, Epoch: epoch.UnixNano(), Breaker: breakerOf(c.Breaker),
	}
	if c.StoreTimeout != nil {
		base.StoreTimeout = time.Duration(*c.StoreTimeout)
	}
	if c.Guard != nil {
		base.Guard = c.Guard.Policy()
	}
	for _, st := range c.Scale {
		base.Scale = append(base.Scale, cluster.Scale{At: st.At.Resolve(epoch), Nodes: st.Nodes})
	}
	from := map[string][]string{}
	for i, ft := range s.Faults {
		before := base
		lists := map[string]int{"outages": len(base.Outages), "failovers": len(base.Failovers), "reshards": len(base.Reshards)}
		ft.Spec.Apply(&base, epoch)
		path := fmt.Sprintf("faults[%d].%s", i, ft.Kind)
		for name, n := range lists {
			for range listLen(&base, name) - n {
				from[name] = append(from[name], path)
			}
		}
		// A scalar the fault set is at its one field (latency: round_trip).
		for _, name := range changedScalars(before, base) {
			from[name] = []string{path + soleField(ft.Spec)}
		}
	}
	// Outages and partitions, in time order (they do not overlap), their paths with them.
	order := make([]int, len(base.Outages))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(base.Outages[a].At, base.Outages[b].At) })
	outages, paths := make([]cluster.Outage, len(order)), make([]string, len(order))
	for i, j := range order {
		outages[i], paths[i] = base.Outages[j], from["outages"][j]
	}
	if len(outages) > 0 {
		base.Outages, from["outages"] = outages, paths
	}
	d := c.DesignFields
	base.VNodes, base.Forward, base.BatchLimit, base.PeerLatency, base.SyncTo = d.VNodes, d.Forward, d.BatchLimit, time.Duration(d.PeerLatency), d.SyncTo
	base.GlobalBatchLimit, base.Behaviors = d.GlobalBatchLimit, d.Behaviors
	if d.BatchWait != nil {
		base.BatchWait = time.Duration(*d.BatchWait)
	}
	base.Sync = cluster.DefaultSync
	if d.Sync != nil {
		base.Sync = time.Duration(*d.Sync)
	}
	return Fleet{Config: base, variant: -1, from: from}
}

// withVariant is base with variant i's changes (v), its slices replaced rather than changed.
func (base Fleet) withVariant(i int, v VariantSpec) Fleet {
	cfg := base.Config
	cfg.Outages = slices.Clone(cfg.Outages)
	if v.Nodes != nil {
		cfg.Nodes = *v.Nodes
	}
	cfg.Balancer = or(v.Balancer, cfg.Balancer)
	cfg.Placement = or(v.Placement, cfg.Placement)
	if v.LocalRecompute != nil {
		cfg.LocalRecompute = *v.LocalRecompute
	}
	if v.Lease != nil {
		cfg.Lease = *v.Lease
	}
	if v.NonatomicKey != "" {
		cfg.TTLWindowKey = v.NonatomicKey == "ttl-window"
	}
	if v.Crash != nil {
		cfg.CrashProbability = *v.Crash
	}
	if v.Latency != nil {
		cfg.Latency = time.Duration(*v.Latency)
	}
	if v.StoreTimeout != nil {
		cfg.StoreTimeout = time.Duration(*v.StoreTimeout)
	}
	if v.Breaker != nil {
		cfg.Breaker = breakerOf(v.Breaker)
	}
	cfg.Clock = or(v.Clock, cfg.Clock)
	if v.Skew != nil {
		cfg.Skew = time.Duration(*v.Skew)
	}
	if v.OutagePolicy != "" {
		for i := range cfg.Outages {
			cfg.Outages[i].Policy = v.OutagePolicy
		}
	}
	o := v.DesignOverrides
	cfg.Forward, cfg.SyncTo = or(o.Forward, cfg.Forward), or(o.SyncTo, cfg.SyncTo)
	if o.BatchWait != nil {
		cfg.BatchWait = time.Duration(*o.BatchWait)
	}
	if o.PeerLatency != nil {
		cfg.PeerLatency = time.Duration(*o.PeerLatency)
	}
	if o.Sync != nil {
		cfg.Sync = time.Duration(*o.Sync)
	}
	if o.Behaviors != nil {
		cfg.Behaviors = *o.Behaviors
	}
	if o.FailoverLag != nil {
		cfg.Failovers = slices.Clone(cfg.Failovers)
		for i := range cfg.Failovers {
			cfg.Failovers[i].Lag = time.Duration(*o.FailoverLag)
		}
	}
	if o.ReshardFor != nil {
		if *o.ReshardFor == 0 {
			cfg.Reshards = nil
		} else {
			cfg.Reshards = slices.Clone(cfg.Reshards)
			for i := range cfg.Reshards {
				cfg.Reshards[i].For = time.Duration(*o.ReshardFor)
			}
		}
	}
	if cfg.Eviction != nil {
		e := *cfg.Eviction
		if o.MaxMemory != "" {
			e.MaxMemory, _ = ParseBytes(o.MaxMemory)
		}
		e.Policy = or(o.EvictionPolicy, e.Policy)
		if v.OutagePolicy != "" {
			e.OutagePolicy = v.OutagePolicy
		}
		cfg.Eviction = &e
	}
	return Fleet{Name: v.Name, Config: cfg, variant: i, from: base.from}
}

// breakerOf is the circuit breaker a cluster section or variant asks for, or nil.
func breakerOf(b *BreakerSpec) *cluster.Breaker {
	if b == nil {
		return nil
	}
	return &cluster.Breaker{Failures: b.Failures, OpenFor: time.Duration(b.OpenFor)}
}

func listLen(c *cluster.Config, name string) int {
	switch name {
	case "outages":
		return len(c.Outages)
	case "failovers":
		return len(c.Failovers)
	}
	return len(c.Reshards)
}

// changedScalars are the fields of Config, by the names its errors give them
// ("crash_probability"), that are not lists and differ between a and b.
func changedScalars(a, b cluster.Config) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range va.NumField() {
		f := va.Type().Field(i)
		if f.Type.Kind() == reflect.Slice || !f.Type.Comparable() {
			continue
		}
		if va.Field(i).Interface() != vb.Field(i).Interface() {
			out = append(out, snake(f.Name))
		}
	}
	return out
}

// snake is a Go field name as Config's errors write it: CrashProbability is
// crash_probability.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// soleField is ".NAME" for a fault spec with one field (latency's round_trip), else "".
func soleField(f Fault) string {
	t := reflect.TypeOf(f).Elem()
	if t.NumField() != 1 {
		return ""
	}
	name, _, _ := strings.Cut(t.Field(0).Tag.Get("yaml"), ",")
	return "." + name
}

// checkFleet checks f with cluster.Config.Validate and places what it reports in the
// file: at the variant's own field when the variant sets it, else at the cluster
// section's, or at the fault an outage, failover, slot move or store setting came from.
func (s *Scenario) checkFleet(file string, f Fleet) error {
	err := f.Config.Validate()
	var fe *cluster.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	return s.fail(file, s.fleetPath(f, fe.Field), "%s", fe.Msg)
}

// fleetPath is where in the file the value of Config's field (as its errors name it)
// comes from for fleet f.
func (s *Scenario) fleetPath(f Fleet, field string) string {
	head, rest := field, ""
	if i := strings.IndexAny(field, ".["); i >= 0 {
		head, rest = field[:i], field[i:]
	}
	if paths := f.from[head]; len(paths) > 0 && strings.HasPrefix(rest, "[") {
		var j int
		if _, err := fmt.Sscanf(rest, "[%d]", &j); err == nil && j < len(paths) {
			_, sub, _ := strings.Cut(rest, "]")
			if f.variant >= 0 && sub == ".policy" && s.Cluster.Variants[f.variant].OutagePolicy != "" {
				return fmt.Sprintf("cluster.variants[%d].outage_policy", f.variant)
			}
			return paths[j] + sub
		}
	}
	if f.variant >= 0 {
		if p := fmt.Sprintf("cluster.variants[%d].%s", f.variant, field); s.positions.at(p) != nil {
			return p
		}
	}
	if p := "cluster." + field; s.positions.at(p) != nil {
		return p
	}
	if paths := f.from[head]; len(paths) == 1 {
		return paths[0] + rest
	}
	return "cluster." + field
}
