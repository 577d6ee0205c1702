package run

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// DecisionWriter streams the per-request decisions file:
// t_ns,key,cost,algorithm,allowed,reference_allowed,scenario.
type DecisionWriter struct {
	w      *csv.Writer
	raw    io.Writer // what w writes to, when known
	header bool
	row    [7]string
}

var decisionColumns = []string{"t_ns", "key", "cost", "algorithm", "allowed", "reference_allowed", "scenario"}

// NewDecisionWriter writes decisions as CSV to w; call Flush when done.
func NewDecisionWriter(w *csv.Writer) *DecisionWriter { return &DecisionWriter{w: w} }

func (d *DecisionWriter) write(scenarioName, algorithm string, r *traffic.Request, key string, allowed, ref bool) error {
	return d.writeRow(scenarioName, algorithm, r.At, key, r.Cost, allowed, ref)
}

// writeRow writes the row of a request of cost for key at at.
func (d *DecisionWriter) writeRow(scenarioName, algorithm string, at time.Duration, key string, cost int64, allowed, ref bool) error {
	if !d.header {
		d.header = true
		if err := d.w.Write(decisionColumns); err != nil {
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

// NewDecisionFile writes decisions as CSV to w, which a replay may also append whole rows
// to directly (see decisionSpool); call Flush when done.
func NewDecisionFile(w io.Writer) *DecisionWriter {
	return &DecisionWriter{w: csv.NewWriter(w), raw: w}
}

// decisionSpool gives each limiter of a run that reads its traffic once (a replayed log)
// a writer of its own, into a temporary file, and appends the files to the decisions
// file in order at the end, so that the rows come grouped by algorithm as they do when
// each algorithm reads the traffic in turn.
type decisionSpool struct {
	out     *DecisionWriter
	files   []*os.File
	writers []*DecisionWriter
}

func newDecisionSpool(out *DecisionWriter, n int) (*decisionSpool, error) {
	s := &decisionSpool{out: out}
	for range n {
		f, err := os.CreateTemp("", "rlsim-decisions-*.csv")
		if err != nil {
			s.close()
			return nil, fmt.Errorf("decisions: %w", err)
		}
		s.files = append(s.files, f)
		s.writers = append(s.writers, &DecisionWriter{w: csv.NewWriter(f), header: true})
	}
	return s, nil
}

// finish appends every limiter's rows to the decisions file, in order, and removes the
// temporary files.
func (s *decisionSpool) finish() error {
	defer s.close()
	for i, f := range s.files {
		w := s.writers[i]
		if err := w.Flush(); err != nil {
			return fmt.Errorf("decisions: %w", err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("decisions: %w", err)
		}
		if err := s.out.appendRows(f); err != nil {
			return err
		}
	}
	return nil
}

func (s *decisionSpool) close() {
	for _, f := range s.files {
		f.Close()
		os.Remove(f.Name())
	}
	s.files = nil
}

// appendRows appends the CSV rows of r (no header) to the file, after its header.
func (d *DecisionWriter) appendRows(r io.Reader) error {
	br := bufio.NewReader(r)
	if _, err := br.Peek(1); err == io.EOF {
		return nil
	}
	if !d.header {
		d.header = true
		if err := d.w.Write(decisionColumns); err != nil {
			return err
		}
	}
	if d.raw != nil {
		d.w.Flush()
		if err := d.w.Error(); err != nil {
			return err
		}
		_, err := io.Copy(d.raw, br)
		return err
	}
	cr := csv.NewReader(br)
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := d.w.Write(row); err != nil {
			return err
		}
	}
}
