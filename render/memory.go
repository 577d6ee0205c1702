package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/store"
)

// redisModelSeriesName labels the Redis bars of a scenario's memory chart: the store's
// model calibrated on Redis 7.0.15, for one client at the policy's limit (rlsim memory
// --redis measures a live server instead).
const redisModelSeriesName = "Redis (model, a client at its limit)"

// redisModelSeries is, per result, the bytes one client at the policy's limit takes in
// Redis according to the store's calibrated model; 0 (not drawn on the log scale) for
// mechanisms the model does not size. ok is false when it sizes none of them.
func redisModelSeries(results []report.Result, limit int64) (series chart.BarSeries, ok bool) {
	series.Name = redisModelSeriesName
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

// MemoryFigure is the chart of `rlsim memory`: each algorithm's bytes per key in process
// beside its bytes in Redis, on a log scale. The Redis series says whether it was measured
// or is the model, and the caption names the command that draws it again (algorithms
// are those the command line named; none: every one) and where the Redis bytes came from.
func MemoryFigure(rep *store.MemoryReport, algorithms []string) *chart.Figure {
	var algs []string
	var inProcess, redis []float64
	for _, r := range rep.Results {
		algs = append(algs, r.Algorithm)
		inProcess = append(inProcess, r.StateBytesPerKey)
		redis = append(redis, r.RedisBytesPerKey)
	}
	redisName := "Redis (model)"
	if rep.Loaded > 0 {
		redisName = "Redis (measured)"
	}
	command := fmt.Sprintf("rlsim memory --keys %d --limit %d", rep.Keys, rep.Limit)
	if rep.Window != time.Minute.String() {
		command += " --window " + rep.Window
	}
	if len(algorithms) > 0 {
		command += " --algorithms " + strings.Join(algorithms, ",")
	}
	// The caption says where the Redis bytes came from: a live server's MEMORY USAGE, or
	// the model calibrated on one.
	source := rep.Redis
	if rep.Loaded > 0 {
		command += " --redis URL"
		if rep.Loaded < rep.Keys {
			command += fmt.Sprintf(" --load %d", rep.Loaded)
		}
		source = fmt.Sprintf("MEMORY USAGE on %s, %d clients", strings.TrimPrefix(rep.Redis, "measured on "), rep.Loaded)
	}
	caption := command + " · Redis bytes: " + source
	if rep.SlidingLogVsTwoCounters > 0 {
		caption += fmt.Sprintf(" · sliding log %.1f× two counters", rep.SlidingLogVsTwoCounters)
	}
	title := fmt.Sprintf("memory per key, one client at its limit of %d per %s", rep.Limit, rep.Window)
	return chart.MemoryFigure(chart.Meta{Title: title, Caption: caption}, algs, []chart.BarSeries{
		{Name: "in-process", Values: inProcess},
		{Name: redisName, Values: redis},
	})
}
