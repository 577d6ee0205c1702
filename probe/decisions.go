package probe

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// DecisionColumns are the columns of a probe's decisions file (rlsim probe --decisions):
// the request's place in the order due (from 1; retries after the plan), its key, when
// it was sent and answered in Unix nanoseconds, its status (0: no response), whether it
// was admitted, the model's decision and the promise's (true, false, or either when it
// turns on the jitter), and the tag the request carried in TagHeader (probe --server-log);
// empty where there is none.
var DecisionColumns = []string{"seq", "key", "sent_ns", "answered_ns", "status", "allowed", "model_allowed", "promise_allowed", "tag"}

// ReadDecisions reads a probe's decisions file (DecisionColumns, the header first) and
// estimates the arrivals as the probe did (Estimate). Rows without a verdict (allowed
// empty) are left out; the tag column may be missing (a file written before it was). A
// problem is one error naming the line and column.
func ReadDecisions(r io.Reader, name string) (Observed, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return Observed{}, fmt.Errorf("%s: empty, want the header %s", name, csvList(DecisionColumns))
	}
	if err != nil {
		return Observed{}, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, c := range []string{"seq", "key", "sent_ns", "answered_ns", "status", "allowed"} {
		if _, ok := col[c]; !ok {
			return Observed{}, fmt.Errorf("%s:1: no column %s (want a probe's decisions file: %s)", name, c, csvList(DecisionColumns))
		}
	}
	var ds []Decision
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return Observed{}, fmt.Errorf("%s:%d:%d: %v", name, pe.Line, pe.Column, pe.Err)
			}
			return Observed{}, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		field := func(c string) (string, int) {
			i, ok := col[c]
			if !ok || i >= len(rec) {
				return "", i
			}
			return rec[i], i
		}
		bad := func(c, want string) error {
			v, i := field(c)
			_, column := cr.FieldPos(min(i, len(rec)-1))
			return fmt.Errorf("%s:%d:%d: %s %q: want %s", name, line, column, c, v, want)
		}
		allowed, _ := field("allowed")
		if allowed == "" {
			continue
		}
		d := Decision{Cost: 1}
		d.Key, _ = field("key")
		d.Tag, _ = field("tag")
		var err1 error
		if d.Admitted, err1 = strconv.ParseBool(allowed); err1 != nil {
			return Observed{}, bad("allowed", "true, false or empty")
		}
		for _, c := range []struct {
			name string
			dst  *int64
		}{{"sent_ns", &d.Sent}, {"answered_ns", &d.Answered}} {
			v, _ := field(c.name)
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return Observed{}, bad(c.name, "Unix nanoseconds")
			}
			*c.dst = n
		}
		if d.Answered < d.Sent {
			return Observed{}, bad("answered_ns", "no earlier than sent_ns")
		}
		v, _ := field("seq")
		if d.Seq, err1 = strconv.Atoi(v); err1 != nil || d.Seq < 1 {
			return Observed{}, bad("seq", "a whole number from 1")
		}
		v, _ = field("status")
		if d.Status, err1 = strconv.Atoi(v); err1 != nil || d.Status < 100 || d.Status > 599 {
			return Observed{}, bad("status", "an HTTP status")
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return Observed{}, fmt.Errorf("%s: no decisions (every row's allowed is empty)", name)
	}
	slices.SortStableFunc(ds, func(a, b Decision) int { return a.Seq - b.Seq })
	return Estimate(ds), nil
}

func csvList(cols []string) string {
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += ","
		}
		s += c
	}
	return s
}
