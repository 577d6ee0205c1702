package run

import (
	"encoding/csv"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// DecisionWriter streams the per-request decisions file:
// t_ns,key,cost,algorithm,allowed,reference_allowed,scenario.
type DecisionWriter struct {
	w      *csv.Writer
	header bool
	row    [7]string
}

// NewDecisionWriter writes decisions as CSV to w; call Flush when done.
func NewDecisionWriter(w *csv.Writer) *DecisionWriter { return &DecisionWriter{w: w} }

func (d *DecisionWriter) write(scenarioName, algorithm string, r *traffic.Request, key string, allowed, ref bool) error {
	return d.writeRow(scenarioName, algorithm, r.At, key, r.Cost, allowed, ref)
}

// writeRow writes the row of a request of cost for key at at.
func (d *DecisionWriter) writeRow(scenarioName, algorithm string, at time.Duration, key string, cost int64, allowed, ref bool) error {
	if !d.header {
		d.header = true
		if err := d.w.Write([]string{"t_ns", "key", "cost", "algorithm", "allowed", "reference_allowed", "scenario"}); err != nil {
			return err
		}
	}
	d.row = [7]string{strconv.FormatInt(int64(at), 10), key, strconv.FormatInt(cost, 10), algorithm,
		strconv.FormatBool(allowed), strconv.FormatBool(ref), scenarioName}
	return d.w.Write(d.row[:])
}

// Flush writes out what is buffered and reports the first write error.
func (d *DecisionWriter) Flush() error {
	d.w.Flush()
	return d.w.Error()
}
