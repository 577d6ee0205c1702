package cluster

import (
	"strings"
	"testing"
	"time"
)

// A partition that cuts only one link touches only the placements that use it: cutting the
// store leaves an owner fleet as if nothing happened, cutting the peers a shared fleet;
// cutting the link a placement needs acts as cutting both.
func TestPartitionCutsOnlyWhatItNames(t *testing.T) {
	part := func(cut string) []Outage {
		return []Outage{{At: time.Minute, For: time.Minute, Policy: "fail-open", Nodes: 2, Cut: cut}}
	}
	for _, c := range []struct {
		cfg       Config
		alg       string
		inert, on string // the cut that changes nothing, the one that acts as both
	}{
		{Config{Nodes: 4, Balancer: "round-robin", Placement: "owner", Forward: "direct"}, "sliding-window", CutStore, CutPeers},
		{Config{Nodes: 4, Balancer: "round-robin", Placement: "shared"}, "sliding-window", CutPeers, CutStore},
		{Config{Nodes: 4, Balancer: "round-robin", Placement: "global-sync", SyncTo: "store", Sync: 100 * time.Millisecond}, "fixed-window", CutPeers, CutStore},
		{Config{Nodes: 4, Balancer: "round-robin", Placement: "global-sync", SyncTo: "owner", Sync: 100 * time.Millisecond}, "token-bucket", CutStore, CutPeers},
	} {
		what := c.cfg.Placement + "/" + c.cfg.SyncTo
		none := c.cfg
		_, base := driveFleet(t, none, c.alg, perMinute, 8, 5, 3*time.Minute)
		inert := c.cfg
		inert.Outages = part(c.inert)
		_, res := driveFleet(t, inert, c.alg, perMinute, 8, 5, 3*time.Minute)
		if res.EffectiveLimit != base.EffectiveLimit || res.OutageAdmitted != 0 || res.Alerts != 0 {
			t.Errorf("%s: a partition from the %s changed the run: effective %d (without %d), %d outage admissions, %d alerts",
				what, c.inert, res.EffectiveLimit, base.EffectiveLimit, res.OutageAdmitted, res.Alerts)
		}
		both := c.cfg
		both.Outages = part("")
		_, want := driveFleet(t, both, c.alg, perMinute, 8, 5, 3*time.Minute)
		on := c.cfg
		on.Outages = part(c.on)
		f, got := driveFleet(t, on, c.alg, perMinute, 8, 5, 3*time.Minute)
		if got.EffectiveLimit != want.EffectiveLimit || got.OutageAdmitted != want.OutageAdmitted || got.OutageAdmitted == 0 {
			t.Errorf("%s: a partition from the %s: effective %d, %d outage admissions; cut from both %d, %d",
				what, c.on, got.EffectiveLimit, got.OutageAdmitted, want.EffectiveLimit, want.OutageAdmitted)
		}
		if !strings.Contains(f.alert, "cut off from") {
			t.Errorf("%s: alert %q does not say what the nodes lost", what, f.alert)
		}
	}
	bad := Config{Nodes: 4, Placement: "shared", Outages: []Outage{{At: time.Minute, For: time.Minute, Policy: "fail-open", Cut: CutPeers}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "outages[0].cut") {
		t.Errorf("a store outage with a cut: %v", err)
	}
}
