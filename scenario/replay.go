package scenario

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// FromLog turns a read access log into a scenario keyed on key under policy p. Every
// line keeps its own wall-clock time: t=0 is the minute the first line falls in, and a
// fixed window aligns on the log's own clock. timeScale multiplies the gaps (0.5 plays
// the log twice as fast, 2 half as fast).
func FromLog(file string, log *traffic.AccessLog, p algorithms.Policy, key string, timeScale float64) (*Scenario, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	if !(timeScale > 0) || timeScale > 1e6 {
		return nil, fmt.Errorf("time scale must be positive, got %g", timeScale)
	}
	if len(log.Entries) == 0 {
		return nil, fmt.Errorf("%s: no requests", file)
	}
	first, final := log.Entries[0], log.Entries[len(log.Entries)-1]
	if err := sim.CheckSpan(first.Time, final.Time); err != nil {
		return nil, fmt.Errorf("lines %d to %d: %w", first.Line, final.Line, err)
	}
	epoch := first.Time.UTC().Truncate(time.Minute)
	if span := float64(final.Time.Sub(epoch)) * timeScale; span >= math.MaxInt64 {
		return nil, fmt.Errorf("lines %d to %d at a time scale of %g: %s is more than the virtual clock runs (about 292 years)",
			first.Line, final.Line, timeScale, final.Time.Sub(first.Time))
	}
	if err := sim.CheckRun(epoch, time.Duration(float64(final.Time.Sub(epoch))*timeScale), p.Window); err != nil {
		return nil, fmt.Errorf("lines %d to %d: %w", first.Line, final.Line, err)
	}
	e := Epoch(epoch)
	reqs := make([]traffic.Request, len(log.Entries))
	for i, en := range log.Entries {
		reqs[i] = en.Request
		reqs[i].At = time.Duration(float64(en.Time.Sub(epoch)) * timeScale)
	}
	last := reqs[len(reqs)-1].At
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	return &Scenario{
		Name:          name,
		Description:   fmt.Sprintf("replay of %s: %d requests", file, len(reqs)),
		Epoch:         &e,
		Duration:      Duration(last + p.Window),
		Policy:        PolicySpec{Limit: p.Limit, Window: Duration(p.Window), Burst: p.Burst},
		Key:           key,
		BackendWindow: Duration(time.Second),
		Source:        file,
		Recorded:      reqs,
		RecordedFrom:  "replay " + file,
	}, nil
}
