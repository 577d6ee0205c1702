package algorithms

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AWSAPIGatewayName is API Gateway throttling's name in specs.
const AWSAPIGatewayName = "aws-apigateway"

func init() {
	Register(Kind{
		Name: AWSAPIGatewayName, Rank: 260,
		Summary: "AWS API Gateway throttling, as documented: a token bucket of burst requests refilled at rate per second",
		Params: []Param{
			{Name: "rate", Doc: "the steady rate, requests per second, up to three decimals (default 10000, the account's)"},
			{Name: "burst", Doc: "the bucket's capacity, in requests (default 5000, the account's)"},
		},
		Configure: configureAWSAPIGateway,
	})
}

func configureAWSAPIGateway(args Args) (Model, error) {
	milli := int64(10000 * 1000)
	if v, ok := args["rate"]; ok {
		// rate is a number of requests per second; read it in thousandths, exactly.
		whole, frac, _ := strings.Cut(v, ".")
		w, err1 := strconv.ParseInt(whole, 10, 64)
		f, err2 := strconv.ParseInt(frac+strings.Repeat("0", max(3-len(frac), 0)), 10, 64)
		if frac == "" {
			f, err2 = 0, nil
		}
		if err1 != nil || err2 != nil || len(frac) > 3 || w < 0 || f < 0 || w > 1<<40 || w*1000+f < 1 || strings.HasPrefix(whole, "+") {
			return nil, fmt.Errorf("rate: want requests per second above 0, up to three decimals (as 100 or 0.5), got %q", v)
		}
		milli = w*1000 + f
	}
	burst, err := args.count("burst", "requests", 5000, 1)
	if err != nil {
		return nil, err
	}
	return awsModel{name: specText(AWSAPIGatewayName, args), policy: Policy{Limit: milli, Window: 1000 * time.Second, Burst: burst}}, nil
}

// awsModel is a configured API Gateway throttle: a token bucket of policy's burst,
// refilled at rate, written as rate·1000 per 1000 s so that a rate of thousandths is a
// whole limit.
type awsModel struct {
	name   string
	policy Policy
}

func (m awsModel) New(Policy) (Limiter, error) {
	return &awsAPIGateway{TokenBucket: NewTokenBucket(m.policy), name: m.name}, nil
}

func (m awsModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	b := tokenBucketBound(m.policy, spanOf(p, span))
	b.Formula = "burst + rate·T"
	b.Source = "AWS API Gateway throttling (docs: api-gateway-request-throttling): a token bucket's burst + rate·T; AWS calls the limits targets, not guaranteed ceilings"
	return b, true
}

// awsAPIGateway is API Gateway's throttle as AWS documents it
// (docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html,
// read 2025): "the token bucket algorithm, where a token counts for a request", with the
// rate as the refill in requests per second and the burst as the bucket's capacity; a key
// starts full and a refused request (429) takes nothing. The implementation is closed, so
// this is the token bucket (token-bucket, x/time/rate's arithmetic) at rate and burst and
// nothing more: it does not know how AWS rounds its clock, whether its buckets are per
// node, or whether a request refused at one level (account, stage, method, usage plan)
// still takes a token at another, and AWS says its limits are targets applied on a
// best-effort basis. Decisions and time that goes backwards are the token bucket's; it
// keeps 16 bytes per key.
//
// A request of cost c takes c tokens (API Gateway takes one), so cost 1 is the product.
// The surprise is only in the words: burst is a capacity, not a per-second cap and not a
// concurrency limit.
type awsAPIGateway struct {
	*TokenBucket
	name string
}

var _ Limiter = (*awsAPIGateway)(nil)

// Name returns the spec, "aws-apigateway:rate=… burst=…".
func (a *awsAPIGateway) Name() string { return a.name }
