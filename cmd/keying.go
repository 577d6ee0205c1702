package cmd

import (
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/scenario"
)

// keyRuns runs a scenario's traffic again under each of its compare_keys, for the keying
// chart of its results folder. The runs write no decisions and draw no progress: they
// serve the chart only.
func keyRuns(sc *scenario.Scenario, opts run.Options) ([]report.KeyRun, error) {
	// The user's limiters are left out: the chart compares keys, and a script on
	// miniredis would take as long again per key.
	opts.Decisions, opts.Progress, opts.Own = nil, nil, nil
	var out []report.KeyRun
	for _, k := range sc.CompareKeys {
		c, err := sc.WithKey(k)
		if err != nil {
			return nil, err
		}
		rep, err := run.Run(c, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, report.KeyRun{Key: k, Results: rep.Results})
	}
	return out, nil
}
