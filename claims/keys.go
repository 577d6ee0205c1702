package claims

import (
	"fmt"
	"strings"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// The thresholds of the keying claims, as shares of a class's requests: a key "lets an
// attacker through" when it admits at least walkThrough of its requests and "stops" it at
// most stopShare; it "refuses a crowd" when it refuses at least crowdHarm of the legit
// requests, and "spares" legit users when it refuses at most legitShare (buckets.go).
const (
	walkThrough = 0.9
	stopShare   = 0.2
	crowdHarm   = 0.5
)

// keyRun is one run of a keying scenario under one key: what legit users and attackers got.
type keyRun struct {
	key            string
	legitRefused   float64
	attackerPassed float64
	blocked        int64 // legit users refused at least once
	users          int64
}

// keyed runs a scenario under the two-counter window, keyed as args say, and reads it.
func keyed(s *session, name, key string, extra ...string) (keyRun, error) {
	args := append([]string{"compare", "--scenario", name, "--algorithms", algorithms.SlidingWindowName}, extra...)
	if key != "" {
		args = append(args, "--key", key)
	}
	rep, ev, err := s.report(args...)
	if err != nil {
		return keyRun{}, err
	}
	x, err := result(rep, algorithms.SlidingWindowName)
	if err != nil {
		return keyRun{}, err
	}
	r := keyRun{key: key, legitRefused: optional(x.LegitRejectRate), attackerPassed: optional(x.AttackerAdmitRate), users: x.LegitUsers}
	if r.key == "" {
		r.key = rep.Key
	}
	if x.LegitUsersBlocked != nil {
		r.blocked = *x.LegitUsersBlocked
	}
	cells := []string{algorithms.SlidingWindowName, cellInt(x.Requests), report.Percent(r.legitRefused)}
	if x.AttackerAdmitRate != nil {
		cells = append(cells, report.Percent(r.attackerPassed))
	}
	ev.cite(cells...)
	return r, nil
}

// natCrowd is an office behind one address, keyed by user and by IP.
type natCrowd struct{ byUser, byIP keyRun }

// Judge: holds when keying by IP refuses at least crowdHarm of the crowd's requests while
// keying by user refuses at most legitShare; holds with a caveat when IP keying only
// refuses more; does not hold otherwise.
func (m natCrowd) Judge() Judgement {
	switch {
	case m.byIP.legitRefused >= crowdHarm && m.byUser.legitRefused <= legitShare:
		return Judgement{Holds, ""}
	case m.byIP.legitRefused > m.byUser.legitRefused:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("keyed by IP only %s of the crowd's requests are refused", pct(m.byIP.legitRefused))}
	}
	return Judgement{DoesNotHold, ""}
}

func (m natCrowd) Text() string {
	return fmt.Sprintf("%d users behind one office address, each well under the limit: keyed by IP %s of their requests refused, %d of %d users refused at least once; keyed by user %s, %d users",
		m.byIP.users, pct(m.byIP.legitRefused), m.byIP.blocked, m.byIP.users, pct(m.byUser.legitRefused), m.byUser.blocked)
}

func measureNATCrowd(s *session) (Measurement, error) {
	byUser, err := keyed(s, "nat-crowd", "")
	if err != nil {
		return nil, err
	}
	byIP, err := keyed(s, "nat-crowd", "ip")
	if err != nil {
		return nil, err
	}
	return natCrowd{byUser: byUser, byIP: byIP}, nil
}

// rotation is an attacker that changes address, under a key it can vary and one it cannot.
type rotation struct {
	what     string // how the attacker rotates
	varied   keyRun // keyed on what the attacker varies
	held     keyRun // keyed on what it cannot vary
	tooShort *keyRun
}

// Judge: holds when the varied key lets the attacker through (walkThrough) and the held
// key stops it (stopShare) without refusing legit users (legitShare). A prefix too short
// that refuses a crowd of neighbours (crowdHarm) is a caveat. Otherwise does not hold.
func (m rotation) Judge() Judgement {
	shown := m.varied.attackerPassed >= walkThrough && m.held.attackerPassed <= stopShare && m.held.legitRefused <= legitShare
	switch {
	case !shown:
		return Judgement{DoesNotHold, fmt.Sprintf("keyed by %s the attacker got %s through, by %s %s", m.varied.key, pct(m.varied.attackerPassed), m.held.key, pct(m.held.attackerPassed))}
	case m.tooShort != nil && m.tooShort.legitRefused >= crowdHarm:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("the prefix must be the one a host gets: %s also refuses %s of the neighbours' requests", m.tooShort.key, pct(m.tooShort.legitRefused))}
	}
	return Judgement{Holds, ""}
}

func (m rotation) Text() string {
	t := fmt.Sprintf("an attacker %s next to %d ordinary users: keyed by %s it gets %s of its requests through; keyed by %s %s, with %s of the users' requests refused",
		m.what, m.held.users, m.varied.key, pct(m.varied.attackerPassed), m.held.key, pct(m.held.attackerPassed), pct(m.held.legitRefused))
	if m.tooShort != nil {
		t += fmt.Sprintf("; keyed by %s, %s of the attacker's and %s of the users' requests", m.tooShort.key, pct(m.tooShort.attackerPassed), pct(m.tooShort.legitRefused))
	}
	return t
}

func measureIPv4Rotation(s *session) (Measurement, error) {
	held, err := keyed(s, "ip-rotation", "")
	if err != nil {
		return nil, err
	}
	varied, err := keyed(s, "ip-rotation", "ip")
	if err != nil {
		return nil, err
	}
	return rotation{what: "on one account spreading its requests over 1000 cloud IPv4 addresses", varied: varied, held: held}, nil
}

func measureIPv6Prefix(s *session) (Measurement, error) {
	held, err := keyed(s, "ipv6-rotation", "")
	if err != nil {
		return nil, err
	}
	varied, err := keyed(s, "ipv6-rotation", "ip")
	if err != nil {
		return nil, err
	}
	short, err := keyed(s, "ipv6-rotation", "ipv6/56")
	if err != nil {
		return nil, err
	}
	return rotation{what: "taking a fresh address inside its /64 for every request", varied: varied, held: held, tooShort: &short}, nil
}

// xffTrust is the X-Forwarded-For spoofer behind K trusted proxies, under the leftmost
// address and under the address 1…K+1 entries from the right.
type xffTrust struct {
	proxies  int
	leftmost keyRun
	right    keyRun // xff:K
	tooFew   keyRun // xff:K−1
	tooMany  keyRun // xff:K+1
}

// wrong reports whether a key fails: it refuses a crowd of legit users or lets the
// attacker through.
func wrong(r keyRun) bool { return r.legitRefused >= crowdHarm || r.attackerPassed >= walkThrough }

// Judge: holds when the leftmost address lets the attacker through, the right count stops
// it and spares legit users, and a count one off either way fails; holds with a caveat when
// a wrong count does not fail here; does not hold otherwise.
func (m xffTrust) Judge() Judgement {
	switch {
	case m.leftmost.attackerPassed < walkThrough || m.right.attackerPassed > stopShare || m.right.legitRefused > legitShare:
		return Judgement{DoesNotHold, fmt.Sprintf("leftmost let %s through; %s let %s through and refused %s of the users' requests",
			pct(m.leftmost.attackerPassed), m.right.key, pct(m.right.attackerPassed), pct(m.right.legitRefused))}
	case !wrong(m.tooFew) || !wrong(m.tooMany):
		return Judgement{HoldsWithCaveat, "a proxy count one off did not fail here"}
	}
	return Judgement{Holds, "only with the right count of trusted proxies: one too few or one too many fails"}
}

func (m xffTrust) Text() string {
	return fmt.Sprintf("behind %d trusted proxies an attacker writes a random address into X-Forwarded-For on every request, next to %d users: "+
		"keyed by the leftmost entry it gets %s through; by %s (the right count) %s, users refused %s; "+
		"a wrong count — %s: users refused %s (every request keyed on a proxy), %s: attacker %s through, users refused %s",
		m.proxies, m.right.users, pct(m.leftmost.attackerPassed), m.right.key, pct(m.right.attackerPassed), pct(m.right.legitRefused),
		m.tooFew.key, pct(m.tooFew.legitRefused), m.tooMany.key, pct(m.tooMany.attackerPassed), pct(m.tooMany.legitRefused))
}

func measureXFFTrust(s *session) (Measurement, error) {
	sc, err := scenario.Load("xff-spoofing")
	if err != nil {
		return nil, err
	}
	k := sc.Proxies
	m := xffTrust{proxies: k}
	for _, p := range []struct {
		key string
		to  *keyRun
	}{{"xff-leftmost", &m.leftmost}, {fmt.Sprintf("xff:%d", k), &m.right}, {fmt.Sprintf("xff:%d", k-1), &m.tooFew}, {fmt.Sprintf("xff:%d", k+1), &m.tooMany}} {
		if *p.to, err = keyed(s, "xff-spoofing", p.key); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// tenantQuotas is the noisy-neighbour scenario with and without its per-tenant quotas.
type tenantQuotas struct {
	with, without keyRun
	layers        string
}

// tenantHarm is the share of the other tenants' requests a shared limit must refuse for
// "a noisy neighbour hurts the others" to be shown.
const tenantHarm = 0.10

// Judge: holds when the quotas spare the other tenants (legitShare) and the shared limit
// alone refuses at least tenantHarm of their requests; holds with a caveat when the quotas
// only do better; otherwise does not hold.
func (m tenantQuotas) Judge() Judgement {
	switch {
	case m.with.legitRefused <= legitShare && m.without.legitRefused >= tenantHarm:
		return Judgement{Holds, ""}
	case m.with.legitRefused < m.without.legitRefused:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("the quotas still let %s of the others' requests be refused", pct(m.with.legitRefused))}
	}
	return Judgement{DoesNotHold, ""}
}

func (m tenantQuotas) Text() string {
	return fmt.Sprintf("three tenants share a backend limit; one on the free plan sends far more than its plan: with per-tenant plan quotas before the shared limit, %s of the other tenants' requests are refused and the noisy one gets %s through; "+
		"with only per-user and shared limits (--layers %s), %s of the others' requests are refused, %d of %d users",
		pct(m.with.legitRefused), pct(m.with.attackerPassed), m.layers, pct(m.without.legitRefused), m.without.blocked, m.without.users)
}

func measureTenantQuotas(s *session) (Measurement, error) {
	with, err := keyed(s, "tenants", "")
	if err != nil {
		return nil, err
	}
	const layers = "user,backend"
	without, err := keyed(s, "tenants", "", "--layers", layers)
	if err != nil {
		return nil, err
	}
	return tenantQuotas{with: with, without: without, layers: layers}, nil
}

// loginLayers is the login attack under an account limit, an IP limit, and both.
type loginLayers struct {
	both, ipOnly, accountOnly campaigns
	legitRefused              float64
}

// campaigns is each attacker campaign's admitted share, by actor.
type campaigns map[string][2]int64 // admitted, sent

func (c campaigns) share(actor string) float64 {
	return ratioOf(float64(c[actor][0]), float64(c[actor][1]))
}

// The login attack's campaigns (traffic/login.go): stuffing from a few addresses, a brute
// force on one account from many, and stuffing spread over many addresses.
const (
	stuffing       = "stuffing"
	bruteForce     = "brute-force"
	spreadStuffing = "spread-stuffing"
)

// Judge: holds when both layers together stop stuffing and the brute force (stopShare),
// the IP layer alone lets the brute force through and the account layer alone lets the
// stuffing through (walkThrough), and legit logins are spared (legitShare); holds with a
// caveat when stuffing spread over many addresses gets through both; otherwise does not
// hold.
func (m loginLayers) Judge() Judgement {
	stops := m.both.share(stuffing) <= stopShare && m.both.share(bruteForce) <= stopShare && m.legitRefused <= legitShare
	needsBoth := m.ipOnly.share(bruteForce) >= walkThrough && m.accountOnly.share(stuffing) >= walkThrough
	switch {
	case !stops || !needsBoth:
		return Judgement{DoesNotHold, fmt.Sprintf("both layers: stuffing %s, brute force %s; IP only: brute force %s; account only: stuffing %s",
			pct(m.both.share(stuffing)), pct(m.both.share(bruteForce)), pct(m.ipOnly.share(bruteForce)), pct(m.accountOnly.share(stuffing)))}
	case m.both.share(spreadStuffing) >= walkThrough:
		return Judgement{HoldsWithCaveat, fmt.Sprintf("stuffing spread over many addresses and many accounts gets %d of %d through both layers: the limit of what keying can do",
			m.both[spreadStuffing][0], m.both[spreadStuffing][1])}
	}
	return Judgement{Holds, ""}
}

func (m loginLayers) Text() string {
	f := func(c campaigns, actor string) string { return fmt.Sprintf("%d/%d", c[actor][0], c[actor][1]) }
	return fmt.Sprintf("attempts admitted of sent — IP limit only: brute force on one account from 2000 addresses %s, stuffing from 3 addresses %s; "+
		"account limit only: brute force %s, stuffing %s; both: brute force %s, stuffing %s, stuffing spread over 5000 addresses %s; legit logins refused %s",
		f(m.ipOnly, bruteForce), f(m.ipOnly, stuffing), f(m.accountOnly, bruteForce), f(m.accountOnly, stuffing),
		f(m.both, bruteForce), f(m.both, stuffing), f(m.both, spreadStuffing), pct(m.legitRefused))
}

// loginArgs is login-attack under the two-counter window with the given layers ("" for
// the scenario's own: account, then IP).
func loginArgs(layers string) []string {
	args := []string{"compare", "--scenario", "login-attack", "--algorithms", algorithms.SlidingWindowName}
	if layers != "" {
		args = append(args, "--layers", layers)
	}
	return args
}

// loginRun runs login-attack with the given layers and reads its campaigns.
func loginRun(s *session, layers string) (campaigns, report.Result, error) {
	rep, ev, err := s.report(loginArgs(layers)...)
	if err != nil {
		return nil, report.Result{}, err
	}
	x, err := result(rep, algorithms.SlidingWindowName)
	if err != nil {
		return nil, report.Result{}, err
	}
	c := campaigns{}
	var cells []string
	for _, a := range x.Attackers {
		c[a.Actor] = [2]int64{a.Admitted, a.Requests}
		cells = append(cells, fmt.Sprintf("%d/%d", a.Admitted, a.Requests))
	}
	for _, actor := range []string{stuffing, bruteForce, spreadStuffing} {
		if _, ok := c[actor]; !ok {
			return nil, report.Result{}, fmt.Errorf("login-attack: no %s campaign", actor)
		}
	}
	ev.cite(append([]string{algorithms.SlidingWindowName}, cells...)...)
	return c, x, nil
}

func measureLoginLayers(s *session) (Measurement, error) {
	var m loginLayers
	var x report.Result
	var err error
	if m.both, x, err = loginRun(s, ""); err != nil {
		return nil, err
	}
	m.legitRefused = optional(x.LegitRejectRate)
	if m.ipOnly, _, err = loginRun(s, "ip"); err != nil {
		return nil, err
	}
	if m.accountOnly, _, err = loginRun(s, "account"); err != nil {
		return nil, err
	}
	return m, nil
}

// namedRefusals is whether each refusal of a layered limit names the layer that made it.
type namedRefusals struct {
	layers         []report.LayerCount
	rejected       int64
	policyInBody   string // the policy name the 429's problem body carries
	policyInHeader string // RateLimit-Policy
	named          string // the name the response was asked to carry
}

// Judge: holds when the layers' refusals add up to every refusal (each refusal is the
// refusing layer's) and the 429 names the policy that refused it, in its body and its
// RateLimit-Policy field; does not hold otherwise.
func (m namedRefusals) Judge() Judgement {
	var sum int64
	for _, l := range m.layers {
		sum += l.Refused
	}
	switch {
	case sum != m.rejected:
		return Judgement{DoesNotHold, fmt.Sprintf("the layers account for %d of %d refusals", sum, m.rejected)}
	case m.policyInBody != m.named || !strings.Contains(m.policyInHeader, `"`+m.named+`"`):
		return Judgement{DoesNotHold, fmt.Sprintf("the 429 names %q (body) and %q (RateLimit-Policy), not %q", m.policyInBody, m.policyInHeader, m.named)}
	}
	return Judgement{Holds, "the order is the scenario's, narrowest first as the notes advise; what is measured is that every refusal names its layer"}
}

func (m namedRefusals) Text() string {
	var parts []string
	for _, l := range m.layers {
		parts = append(parts, fmt.Sprintf("%s (%s) checked %d, refused %d", l.Layer, l.Key, l.Checked, l.Refused))
	}
	return fmt.Sprintf("login-attack, layers in the order checked: %s — %d refusals in all, each counted at the layer that made it; "+
		"the 429 of a policy named %q carries it in its problem body (\"policy\": %q) and in RateLimit-Policy (%s)",
		strings.Join(parts, "; "), m.rejected, m.named, m.policyInBody, m.policyInHeader)
}

func measureNamedRefusals(s *session) (Measurement, error) {
	rep, ev, err := s.report(loginArgs("")...)
	if err != nil {
		return nil, err
	}
	x, err := result(rep, algorithms.SlidingWindowName)
	if err != nil {
		return nil, err
	}
	m := namedRefusals{layers: x.RefusalsByLayer, rejected: x.Rejected, named: "account"}
	cells := []string{algorithms.SlidingWindowName}
	for _, l := range x.RefusalsByLayer {
		cells = append(cells, cellInt(l.Refused))
	}
	ev.cite(cells...)
	r, ev, err := s.headers("headers", "--name", m.named, "--limit", "5", "--window", "5m")
	if err != nil {
		return nil, err
	}
	var body struct {
		Policy string `json:"policy"`
	}
	if err := unmarshalBody(r, &body); err != nil {
		return nil, err
	}
	m.policyInBody, m.policyInHeader = body.Policy, r.Headers["RateLimit-Policy"]
	ev.cite("RateLimit-Policy: " + m.policyInHeader)
	ev.cite(`"policy": "` + m.policyInBody + `"`) // as headers prints the body: indented
	return m, nil
}
