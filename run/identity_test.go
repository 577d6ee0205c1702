package run

import (
	"testing"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// runBuiltin runs a built-in scenario with the given algorithms after edit changes it.
func runBuiltin(t *testing.T, name string, algs []string, edit func(*scenario.Scenario) error) map[string]report.Result {
	t.Helper()
	sc, err := scenario.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		if err := edit(sc); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Run(sc, Options{Algorithms: algs})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]report.Result{}
	for _, r := range rep.Results {
		out[r.Algorithm] = r
	}
	return out
}

func keyed(k string) func(*scenario.Scenario) error {
	return func(s *scenario.Scenario) error { return s.OverrideKey(k) }
}

func layers(names ...string) func(*scenario.Scenario) error {
	return func(s *scenario.Scenario) error { return s.KeepLayers(names) }
}

func attacker(r report.Result, actor string) report.ActorCount {
	for _, a := range r.Attackers {
		if a.Actor == actor {
			return a
		}
	}
	return report.ActorCount{}
}

func TestPageLoadStrictWindowBreaksWhatABucketServes(t *testing.T) {
	res := runBuiltin(t, "page-load", []string{"sliding-log", "token-bucket"}, nil)
	strict, bucket := res["sliding-log"], res["token-bucket"]
	if *strict.BrokenPageLoads < 5**bucket.BrokenPageLoads || *strict.BrokenPageLoads < 0.2 {
		t.Fatalf("broken page loads: strict %.3f, bucket %.3f; want strict clearly worse", *strict.BrokenPageLoads, *bucket.BrokenPageLoads)
	}
	for _, r := range res {
		if *r.LongRunPeak > 10 {
			t.Errorf("%s: long-run peak %.1f/s above the 10/s limit", r.Algorithm, *r.LongRunPeak)
		}
	}
}

func TestNATCrowdIPKeyRefusesTheOffice(t *testing.T) {
	byIP := runBuiltin(t, "nat-crowd", []string{"token-bucket"}, keyed("ip"))["token-bucket"]
	byUser := runBuiltin(t, "nat-crowd", []string{"token-bucket"}, nil)["token-bucket"]
	if *byIP.LegitRejectRate < 0.5 || *byIP.LegitUsersBlocked < byIP.LegitUsers*9/10 {
		t.Errorf("keyed by ip: legit reject %.3f, %d/%d users blocked; want bulk refusals", *byIP.LegitRejectRate, *byIP.LegitUsersBlocked, byIP.LegitUsers)
	}
	if *byUser.LegitRejectRate > 0.01 {
		t.Errorf("keyed by user: legit reject %.3f, want almost none", *byUser.LegitRejectRate)
	}
}

func TestRotatingAttackersBeatPerAddressKeys(t *testing.T) {
	for _, tt := range []struct{ scenario, weak, strong string }{
		{"ip-rotation", "ip", "user"},
		{"ipv6-rotation", "ip", "ipv6/64"},
		{"xff-spoofing", "xff-leftmost", "xff:2"},
	} {
		weak := runBuiltin(t, tt.scenario, []string{"gcra"}, keyed(tt.weak))["gcra"]
		strong := runBuiltin(t, tt.scenario, []string{"gcra"}, keyed(tt.strong))["gcra"]
		if *weak.AttackerAdmitRate < 0.99 {
			t.Errorf("%s keyed %s: attacker admitted %.3f, want all", tt.scenario, tt.weak, *weak.AttackerAdmitRate)
		}
		if *strong.AttackerAdmitRate > 0.1 || *strong.LegitRejectRate > 0.01 {
			t.Errorf("%s keyed %s: attacker admitted %.3f, legit refused %.3f; want the attacker limited", tt.scenario, tt.strong, *strong.AttackerAdmitRate, *strong.LegitRejectRate)
		}
	}
}

func TestLoginLayersEachStopOneAttack(t *testing.T) {
	algs := []string{"sliding-window"}
	both := runBuiltin(t, "login-attack", algs, nil)["sliding-window"]
	ipOnly := runBuiltin(t, "login-attack", algs, layers("ip"))["sliding-window"]
	accountOnly := runBuiltin(t, "login-attack", algs, layers("account"))["sliding-window"]
	rate := func(a report.ActorCount) float64 { return float64(a.Admitted) / float64(a.Requests) }
	if r := rate(attacker(ipOnly, "brute-force")); r < 0.9 {
		t.Errorf("ip limit alone let %.2f of the brute force through, want nearly all", r)
	}
	if r := rate(attacker(accountOnly, "stuffing")); r < 0.9 {
		t.Errorf("account limit alone let %.2f of the stuffing through, want nearly all", r)
	}
	for _, actor := range []string{"brute-force", "stuffing"} {
		if r := rate(attacker(both, actor)); r > 0.15 {
			t.Errorf("both layers let %.2f of %s through", r, actor)
		}
	}
	if r := rate(attacker(both, "spread-stuffing")); r < 0.9 {
		t.Errorf("spread stuffing got %.2f through both layers; the scenario should show it passing", r)
	}
	if *both.LegitRejectRate > 0.01 {
		t.Errorf("legit logins refused %.3f", *both.LegitRejectRate)
	}
	if len(both.RefusalsByLayer) != 2 || both.RefusalsByLayer[0].Layer != "account" || both.RefusalsByLayer[0].Refused == 0 || both.RefusalsByLayer[1].Refused == 0 {
		t.Errorf("refusals by layer %+v, want both layers named and refusing", both.RefusalsByLayer)
	}
	if got := both.RefusalsByLayer[0].Refused + both.RefusalsByLayer[1].Refused; got != both.Rejected {
		t.Errorf("layers refused %d, the run rejected %d", got, both.Rejected)
	}
}

func TestTenantQuotasShieldTheOthersFromTheNoisyNeighbour(t *testing.T) {
	with := runBuiltin(t, "tenants", []string{"sliding-window"}, nil)["sliding-window"]
	without := runBuiltin(t, "tenants", []string{"sliding-window"}, layers("user", "backend"))["sliding-window"]
	if *with.LegitRejectRate > 0.001 || *without.LegitRejectRate < 0.1 {
		t.Errorf("legit refused %.3f with tenant quotas, %.3f without; want the quotas to shield them", *with.LegitRejectRate, *without.LegitRejectRate)
	}
	noisy := attacker(with, "noisy")
	if noisy.Requests == 0 || float64(noisy.Admitted) > 0.3*float64(noisy.Requests) {
		t.Errorf("noisy tenant admitted %d/%d under its free plan", noisy.Admitted, noisy.Requests)
	}
}

func TestCostWeightedHoldsTheReportHog(t *testing.T) {
	r := runBuiltin(t, "cost-weighted", []string{"sliding-log"}, nil)["sliding-log"]
	hog := attacker(r, "report-hog")
	// 120 units/min at 20 per report: at most 6 reports a minute over 3 minutes, + 1 window.
	if hog.Admitted > 6*4 || *r.LegitRejectRate > 0.01 {
		t.Errorf("hog admitted %d/%d reports, legit refused %.4f", hog.Admitted, hog.Requests, *r.LegitRejectRate)
	}
}

func TestIdentityScenariosAreDeterministic(t *testing.T) {
	a := runBuiltin(t, "login-attack", []string{"gcra"}, nil)["gcra"]
	b := runBuiltin(t, "login-attack", []string{"gcra"}, nil)["gcra"]
	if a.Admitted != b.Admitted || a.RefusalsByLayer[1] != b.RefusalsByLayer[1] {
		t.Fatalf("two runs differ: %+v vs %+v", a, b)
	}
}
