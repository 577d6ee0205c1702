package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/scenario"
)

// policyFlags are the flags that define the one policy `headers` and `serve` apply.
type policyFlags struct {
	name       string
	algorithm  string
	limit      int64
	window     time.Duration
	burst      int64
	legacy     bool
	xRateLimit bool
	noDraft    bool
	date       bool
}

func (p *policyFlags) register(f *pflag.FlagSet) {
	f.StringVar(&p.name, "name", "default", "policy name sent in RateLimit-Policy and the problem body")
	f.StringVar(&p.algorithm, "algorithm", algorithms.SlidingWindowName, "algorithm: "+strings.Join(algorithms.Defaults(), ", "))
	p.limit, p.window = 100, time.Minute
	f.Var(unitsValue{&p.limit}, "limit", "units per window")
	f.Var(windowValue{&p.window}, "window", "window")
	f.Var(unitsValue{&p.burst}, "burst", "bucket capacity of token-bucket, leaky-bucket and gcra (default: limit)")
	f.BoolVar(&p.legacy, "legacy-headers", false, "also send RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset")
	f.BoolVar(&p.xRateLimit, "x-ratelimit", false, "also send X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset")
	f.BoolVar(&p.noDraft, "no-draft-headers", false, "leave out the IETF draft's RateLimit-Policy and RateLimit")
	f.BoolVar(&p.date, "retry-after-date", false, "send Retry-After as an HTTP-date instead of seconds")
}

func (p *policyFlags) build() (algorithms.Limiter, response.Policy, response.Headers, error) {
	if _, err := algorithms.Parse(p.algorithm); err != nil {
		return nil, response.Policy{}, response.Headers{}, usagef("--algorithm: %v", err)
	}
	pol := algorithms.Policy{Limit: p.limit, Window: p.window, Burst: p.burst}
	if err := pol.Validate(); err != nil {
		flag := "--limit"
		switch {
		case p.limit > 0 && p.window <= 0:
			flag = "--window"
		case p.limit > 0 && p.window > 0:
			flag = "--burst"
		}
		return nil, response.Policy{}, response.Headers{}, usagef("%s: %v", flag, err)
	}
	if p.name == "" {
		return nil, response.Policy{}, response.Headers{}, usagef("--name: must not be empty")
	}
	lim, err := algorithms.New(p.algorithm, pol)
	if err != nil {
		return nil, response.Policy{}, response.Headers{}, usagef("%v", err)
	}
	return lim, response.Policy{Name: p.name, Policy: pol},
		response.Headers{Legacy: p.legacy, XRateLimit: p.xRateLimit, NoDraft: p.noDraft}, nil
}

type headersOptions struct {
	*globalOptions
	policy   policyFlags
	requests int64
	cost     int64
	spread   time.Duration
	at       time.Duration
}

func newHeadersCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &headersOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "headers",
		Short: "Print the response a policy sends to the last of a burst (by default: a 429)",
		Long: `headers sends --requests requests of one key (default: limit + 1) through the policy,
spread evenly over --spread from --at after 10:00:00, and prints the HTTP response to the
last one: with no flags, the refusal a default policy (100 per minute) sends.`,
		Example: `  # the 429 a policy of 100 per minute sends to the 101st request
  rlsim headers

  # a token bucket of 10 per second, with the older header names too, as JSON
  rlsim headers --algorithm token-bucket --limit 10 --window 1s --legacy-headers --format json

  # a request that can never pass: 413
  rlsim headers --requests 1 --cost 101`,
		Args: argCount(0, 0),
		RunE: func(*cobra.Command, []string) error { return runHeaders(o, streams) },
	}
	f := c.Flags()
	o.policy.register(f)
	f.Int64Var(&o.requests, "requests", 0, "requests in the burst (default: limit + 1)")
	f.Int64Var(&o.cost, "cost", 1, "cost of each request")
	f.DurationVar(&o.spread, "spread", 0, "spread the burst evenly over this long")
	f.DurationVar(&o.at, "at", 48*time.Second, "time of the first request after 10:00:00")
	g.addFormatFlag(c, "table", "json")
	return c
}

// headersReport is the JSON form of `rlsim headers`.
type headersReport struct {
	Algorithm string            `json:"algorithm"`
	Policy    report.Policy     `json:"policy"`
	Requests  int64             `json:"requests"`
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers"`
	Body      json.RawMessage   `json:"body,omitempty"`
}

func runHeaders(o *headersOptions, streams IO) error {
	lim, pol, which, err := o.policy.build()
	if err != nil {
		return err
	}
	n := o.requests
	if n == 0 {
		n = pol.Limit + 1
	}
	switch {
	case n < 1 || n > 10_000_000:
		return usagef("--requests: must be between 1 and 10000000, got %d", n)
	case o.cost < 1:
		return usagef("--cost: must be at least 1, got %d", o.cost)
	case o.spread < 0:
		return usagef("--spread: must not be negative, got %s", o.spread)
	case o.at < 0:
		return usagef("--at: must not be negative, got %s", o.at)
	}
	start := scenario.DefaultEpoch.Add(o.at)
	var last algorithms.Decision
	var lastAt time.Time
	for i := range n {
		at := start
		if n > 1 {
			at = start.Add(time.Duration(float64(o.spread) * float64(i) / float64(n-1)))
		}
		last, lastAt = lim.Allow(0, at.UnixNano(), o.cost), at
	}
	r := response.For(last, pol, which)
	if o.policy.date {
		r.RetryAfterDate(lastAt)
	}
	var buf bytes.Buffer
	hdr := map[string]string{}
	for k := range r.Header {
		hdr[response.DisplayName(k)] = r.Header.Get(k)
	}
	value := headersReport{
		Algorithm: o.policy.algorithm,
		Policy:    report.Policy{Limit: pol.Limit, Window: report.Duration(pol.Window), Burst: pol.EffectiveBurst()},
		Requests:  n, Status: r.Status, Headers: hdr, Body: json.RawMessage(bytes.TrimSpace(r.Body)),
	}
	// Every other format is the response itself, as it would go on the wire, written into
	// buf (json.Indent writes to a buffer).
	err = writeOutput(&buf, o.format, output{JSON: value, Human: func(io.Writer, bool) error { return writeHTTPResponse(&buf, r) }})
	if err != nil {
		return err
	}
	_, err = streams.Out.Write(buf.Bytes())
	return err
}

// writeHTTPResponse prints r as an HTTP/1.1 response with its headers sorted.
func writeHTTPResponse(buf *bytes.Buffer, r response.Response) error {
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\n", r.Status, http.StatusText(r.Status))
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(buf, "%s: %s\n", response.DisplayName(k), r.Header.Get(k))
	}
	if len(r.Body) > 0 {
		buf.WriteString("\n")
		// A JSON body is indented for the terminal, so that it fits 100 columns; JSON's
		// whitespace is not part of what it says, and serve sends it on one line.
		if err := json.Indent(buf, bytes.TrimSpace(r.Body), "", "  "); err != nil {
			buf.Write(r.Body)
		} else {
			buf.WriteString("\n")
		}
	}
	return nil
}
