package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

func init() {
	registerSnippet(snippetWriter{
		product: "haproxy", name: "HAProxy",
		params: []string{"period", "gt", "ge"},
		keys:   append([]string{"route", "ip", "ipv6", "xff", "xff-leftmost"}, identityKinds...),
		check:  checkHAProxySnippet,
		why:    func(snippetKey) string { return "no sample fetch of HAProxy holds it" },
		write:  writeHAProxySnippet,
	})
}

// The largest period (HAProxy's timers are 32-bit milliseconds) and rate HAProxy's model
// takes.
const (
	haSnippetMaxPeriod = 1<<31 - 1
	haSnippetMaxRate   = 1_000_000_000
)

// haSnippetPeriod reads a period in HAProxy's time format, in whole milliseconds.
func haSnippetPeriod(text string) (int64, bool) {
	num, unit := text, int64(1)
	for _, u := range []struct {
		suffix string
		ms     int64
	}{{"ms", 1}, {"s", 1000}, {"m", 60_000}, {"h", 3_600_000}, {"d", 86_400_000}} {
		if strings.HasSuffix(text, u.suffix) {
			num, unit = strings.TrimSuffix(text, u.suffix), u.ms
			break
		}
	}
	if strings.HasSuffix(text, "us") {
		return 0, false
	}
	n, ok := wholeNumber(num, 1, haSnippetMaxPeriod/unit)
	return n * unit, ok
}

func checkHAProxySnippet(set []Param) error {
	period, ok := value(set, "period")
	if !ok {
		return errors.New("period is required (period=10s)")
	}
	if _, ok := haSnippetPeriod(period); !ok {
		return fmt.Errorf("period %q: want a positive whole number with a unit ms, s, m, h or d (10s), at most %d ms", period, int64(haSnippetMaxPeriod))
	}
	gt, hasGT := value(set, "gt")
	ge, hasGE := value(set, "ge")
	op, v := "gt", gt
	switch {
	case hasGT && hasGE:
		return errors.New("give one of gt and ge, not both")
	case hasGE:
		op, v = "ge", ge
	case !hasGT:
		return errors.New("the deny rule's comparison is required: gt=N or ge=N")
	}
	n, ok := wholeNumber(v, 0, haSnippetMaxRate)
	if !ok {
		return fmt.Errorf("%s %q: want a whole number from 0 to %d", op, v, haSnippetMaxRate)
	}
	if n == 0 || op == "ge" && n == 1 {
		return fmt.Errorf("%s=%d refuses every request once it is tracked: no rate to deploy", op, n)
	}
	return nil
}

// haKeySample is the sample a track rule counts on for k, the stick table's type for
// it, and words for the snippet's head.
func haKeySample(k snippetKey) (sample, tableType, words string) {
	switch k.kind {
	case "ip":
		return "src", "ipv6", "each client address"
	case "ipv6":
		return fmt.Sprintf("src,ipmask(32,%d)", k.n), "ipv6", fmt.Sprintf("each client address, IPv6 by its /%d", k.n)
	case "xff":
		return fmt.Sprintf("req.hdr_ip(x-forwarded-for,-%d)", k.n), "ipv6", fmt.Sprintf("the X-Forwarded-For address %d from the right, the one the first of %d trusted proxies appended", k.n, k.n)
	case "xff-leftmost":
		return "req.hdr_ip(x-forwarded-for,1)", "ipv6", "the first X-Forwarded-For address, which the client wrote itself; a request without the header is not tracked"
	case "route":
		return "path", "string len 256", "each request path"
	}
	return "req.hdr(" + strings.ToLower(k.header) + ")", "string len 128", "the " + k.header + " request header; a request without it is not tracked, so not limited"
}

// writeHAProxySnippet writes a backend that holds the stick table and the two lines of a
// frontend that track each request in it and deny over the rate.
func writeHAProxySnippet(s snippetSpec, k snippetKey) (string, error) {
	set := s.sets[0]
	period, _ := value(set, "period")
	ms, _ := haSnippetPeriod(period)
	op, n := "gt", ""
	if v, ok := value(set, "ge"); ok {
		op, n = "ge", v
	} else {
		n, _ = value(set, "gt")
	}
	expire := min(2*ms, haSnippetMaxPeriod)
	sample, tableType, words := haKeySample(k)
	var b strings.Builder
	b.WriteString(snippetHead("#", s, k, words,
		"`rlsim import` reads these lines back as that spec and key.",
		"",
		"The backend holds the table; the two http-request lines go in your frontend, in this order, before any rule that picks a backend. An entry expires two periods after its key's last request, when its rate has fallen to 0.",
	))
	fmt.Fprintf(&b, "backend rlsim_limit\n    stick-table type %s size 1m expire %s store http_req_rate(%s)\n\n",
		tableType, formatDuration(time.Duration(expire)*time.Millisecond), period)
	fmt.Fprintf(&b, "frontend fe\n    http-request track-sc0 %s table rlsim_limit\n", sample)
	fmt.Fprintf(&b, "    http-request deny deny_status 429 if { sc_http_req_rate(0) %s %s }\n", op, n)
	return b.String(), nil
}
