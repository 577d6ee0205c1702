package cmd

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/store"
)

// memoryFolder is the folder under --out that rlsim memory draws into.
const memoryFolder = "memory"

// memoryFigure draws each algorithm's bytes per key in-process beside its bytes in Redis
// on a log scale; the Redis series says whether it was measured or is the model.
func memoryFigure(o *memoryOptions, rep *store.MemoryReport) *chart.Figure {
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
	if len(o.algorithms) > 0 {
		command += " --algorithms " + strings.Join(o.algorithms, ",")
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

// renderMemoryCharts renders the memory figure in every format, before anything is
// written, as files of the folder memory under the results folder.
func renderMemoryCharts(o *memoryOptions, rep *store.MemoryReport, formats []string) ([]outFile, error) {
	if len(formats) == 0 || len(rep.Results) == 0 {
		return nil, nil
	}
	fig := memoryFigure(o, rep)
	var files []outFile
	for _, format := range formats {
		var b bytes.Buffer
		if err := fig.Render(&b, format); err != nil {
			return nil, fmt.Errorf("chart %s: %w", fig.Name, err)
		}
		files = append(files, outFile{path: filepath.Join(memoryFolder, fig.Name+"."+format), data: b.Bytes()})
	}
	return files, nil
}
