package claims

import (
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// secProducts is the section of the claims about the limiters products deploy, each
// measured by running rlsim's model of the product (docs/products.md,
// docs/products-nginx-haproxy.md).
const secProducts = "Beyond the notes: the limiters products deploy (docs/products.md)"

// The models the product claims run, as their specs.
const (
	nginxBurst20   = "nginx:rate=10r/s burst=20 nodelay"
	haproxyGT20    = "haproxy:period=10s gt=20"
	kongMinute100  = "kong:minute=100"
	expressMinute  = "express-rate-limit:windowMs=60000 limit=100"
	nginxBurstSize = 20 // nginxBurst20's burst=
)

var (
	nginxBurstArgs   = []string{"compare", "--scenario", "token-burst", "--algorithms", nginxBurst20 + "," + algorithms.GCRAName, "--decisions", "decisions.csv"}
	haproxyArgs      = []string{"compare", "--scenario", "token-burst", "--algorithms", haproxyGT20 + "," + algorithms.SlidingWindowName, "--limit", "20", "--window", "10s"}
	kongCalendarArgs = []string{"compare", "--scenario", "boundary-burst", "--algorithms", kongMinute100 + "," + expressMinute}
)

// nginxBurstPlusOne is what nginx's model and GCRA let through of a burst after a quiet
// start.
type nginxBurstPlusOne struct {
	burst, gcraBurst            int64 // nginx's burst=, and GCRA's --burst
	sent                        int64 // requests at the burst's instant
	nginxAtOnce, gcraAtOnce     int64 // admitted at that instant
	nginxAdmitted, gcraAdmitted int64 // over the whole run
}

// Judge: holds when nginx passed burst+1 at once; does not hold when it passed any other
// number (burst, as the textbook's burst would, or fewer).
func (m nginxBurstPlusOne) Judge() Judgement {
	if m.nginxAtOnce != m.burst+1 {
		return Judgement{DoesNotHold, fmt.Sprintf("nginx passed %d at once with burst=%d", m.nginxAtOnce, m.burst)}
	}
	return Judgement{Holds, fmt.Sprintf("write burst=%d for a burst of %d requests", m.burst-1, m.burst)}
}

func (m nginxBurstPlusOne) Text() string {
	return fmt.Sprintf("token-burst, %d requests at once after a quiet start: nginx rate=10r/s burst=%d nodelay passes %d of them, GCRA with --burst %d passes %d; over the run %d and %d admitted",
		m.sent, m.burst, m.nginxAtOnce, m.gcraBurst, m.gcraAtOnce, m.nginxAdmitted, m.gcraAdmitted)
}

func measureNginxBurst(s *session) (Measurement, error) {
	rep, ev, err := s.report(nginxBurstArgs...)
	if err != nil {
		return nil, err
	}
	ds, err := s.decisions(nginxBurstArgs...)
	if err != nil {
		return nil, err
	}
	m := nginxBurstPlusOne{burst: nginxBurstSize, gcraBurst: rep.Policy.Burst}
	nginx, err := result(rep, nginxBurst20)
	if err != nil {
		return nil, err
	}
	gcra, err := result(rep, algorithms.GCRAName)
	if err != nil {
		return nil, err
	}
	m.nginxAdmitted, m.gcraAdmitted = nginx.Admitted, gcra.Admitted
	// The burst is the instant with the most requests.
	at := map[time.Duration]int64{}
	var burstAt time.Duration
	for _, d := range ds {
		if d.algorithm == nginxBurst20 {
			if at[d.at]++; at[d.at] > at[burstAt] {
				burstAt = d.at
			}
		}
	}
	m.sent = at[burstAt]
	for _, d := range ds {
		switch {
		case d.at != burstAt || !d.allowed:
		case d.algorithm == nginxBurst20:
			m.nginxAtOnce++
		case d.algorithm == algorithms.GCRAName:
			m.gcraAtOnce++
		}
	}
	ev.cite(nginxBurst20, cellInt(nginx.Requests), cellInt(nginx.Admitted))
	ev.cite(algorithms.GCRAName, cellInt(gcra.Requests), cellInt(gcra.Admitted))
	return m, nil
}

// haproxyRefusedCount is what HAProxy's stick-table rate and the two-counter sliding
// window of the same limit admitted of one client held over its limit.
type haproxyRefusedCount struct {
	requests               int64
	haproxy, slidingWindow int64 // admitted
	haproxyPeak, limit     int64 // HAProxy's busiest window, and the limit
}

// heldBelow is the share of the sliding window's admissions below which HAProxy counts as
// holding a client over its limit "far below" it: a refused request that did not count
// could cost at most the few requests at each period's edge.
const heldBelow = 0.5

// Judge: holds when HAProxy admitted less than heldBelow of what the sliding window did,
// within the limit; does not hold otherwise.
func (m haproxyRefusedCount) Judge() Judgement {
	share := float64(m.haproxy) / float64(max(m.slidingWindow, 1))
	switch {
	case m.haproxyPeak > m.limit:
		return Judgement{DoesNotHold, fmt.Sprintf("HAProxy let %d through in one window of limit %d", m.haproxyPeak, m.limit)}
	case share >= heldBelow:
		return Judgement{DoesNotHold, fmt.Sprintf("HAProxy admitted %.0f%% of the sliding window's admissions", 100*share)}
	}
	return Judgement{Holds, fmt.Sprintf("a client that keeps knocking over its limit stays refused; HAProxy admitted %.0f%% of what the sliding window did", 100*share)}
}

func (m haproxyRefusedCount) Text() string {
	return fmt.Sprintf("token-burst at 20 per 10 s, %d requests: HAProxy's http_req_rate(10s) gt 20 admitted %d (busiest window %d), the two-counter sliding window %d",
		m.requests, m.haproxy, m.haproxyPeak, m.slidingWindow)
}

func measureHAProxyRefused(s *session) (Measurement, error) {
	rep, ev, err := s.report(haproxyArgs...)
	if err != nil {
		return nil, err
	}
	h, err := result(rep, haproxyGT20)
	if err != nil {
		return nil, err
	}
	sw, err := result(rep, algorithms.SlidingWindowName)
	if err != nil {
		return nil, err
	}
	ev.cite(haproxyGT20, cellInt(h.Requests), cellInt(h.Admitted), cellInt(h.Rejected), cellInt(h.PeakWindowAdmitted))
	ev.cite(algorithms.SlidingWindowName, cellInt(sw.Requests), cellInt(sw.Admitted))
	return haproxyRefusedCount{requests: h.Requests, haproxy: h.Admitted, slidingWindow: sw.Admitted, haproxyPeak: h.PeakWindowAdmitted, limit: rep.Policy.Limit}, nil
}

// kongCalendar is what Kong's calendar minute and a window opened by the key's first
// request (express-rate-limit) let through of two bursts either side of a minute's edge.
type kongCalendar struct {
	limit         int64
	kong, express int64 // peak_window_admitted
}

// Judge: holds when Kong's minute let both bursts through (twice the limit in one trailing
// minute) while the first-request window held to the limit; does not hold when Kong held
// to the limit too (its window then opened with the key, not on the clock).
func (m kongCalendar) Judge() Judgement {
	if m.kong != 2*m.limit || m.express > m.limit {
		return Judgement{DoesNotHold, fmt.Sprintf("Kong's busiest minute held %d and the first-request window's %d, at limit %d", m.kong, m.express, m.limit)}
	}
	return Judgement{Holds, "the boundary burst of a fixed window: Kong's minute starts at :00 UTC whoever asks"}
}

func (m kongCalendar) Text() string {
	return fmt.Sprintf("boundary-burst (%d requests at 10:00:59.900, %d at 10:01:00.100): Kong minute=%d let %d through in one trailing minute; express-rate-limit, whose window opens at the key's first request, %d",
		m.limit, m.limit, m.limit, m.kong, m.express)
}

func measureKongCalendar(s *session) (Measurement, error) {
	rep, ev, err := s.report(kongCalendarArgs...)
	if err != nil {
		return nil, err
	}
	k, err := result(rep, kongMinute100)
	if err != nil {
		return nil, err
	}
	e, err := result(rep, expressMinute)
	if err != nil {
		return nil, err
	}
	ev.cite(kongMinute100, cellInt(k.Requests), cellInt(k.Admitted), cellInt(k.PeakWindowAdmitted))
	ev.cite(expressMinute, cellInt(e.Requests), cellInt(e.Admitted), cellInt(e.PeakWindowAdmitted))
	return kongCalendar{limit: rep.Policy.Limit, kong: k.PeakWindowAdmitted, express: e.PeakWindowAdmitted}, nil
}
