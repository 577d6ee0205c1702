package scenario

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
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
	epoch := log.Entries[0].Time.UTC().Truncate(time.Minute)
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
