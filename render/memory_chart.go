package render

import (
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

// redisModelSeries is, per result, the bytes one client at the policy's limit takes in
// Redis according to the store's calibrated model; 0 (not drawn on the log scale) for
// mechanisms the model does not size. ok is false when it sizes none of them.
func redisModelSeries(results []report.Result, limit int64) (series chart.BarSeries, ok bool) {
	series.Name = report.RedisModelSeriesName
	for _, x := range results {
		b, _, err := store.ModelBytes(x.Algorithm, limit)
		if err != nil {
			b = 0
		}
		ok = ok || b > 0
		series.Values = append(series.Values, float64(b))
	}
	return series, ok
}
