package report

import (
	"testing"
	"time"
)

const second = int64(time.Second)

func boundaryReport(admissions func(alg int) []Admission) *Report {
	r := &Report{Scenario: "edge", Policy: Policy{Limit: 100, Window: Duration(time.Minute), Burst: 100}}
	for alg, name := range []string{"fixed-window", "sliding-log"} {
		tl := &Timeline{Bin: 200 * time.Millisecond, Admitted: make([]int64, 600), Refused: make([]int64, 600),
			WindowAdmitted: make([]int64, 600), Admissions: admissions(alg)}
		over := float64(tl.Admissions[len(tl.Admissions)-1].Count) / 100
		r.Results = append(r.Results, Result{Algorithm: name, OverAdmission: over, Timeline: tl})
	}
	return r
}

func TestExactLogGivesUpPastItsBound(t *testing.T) {
	var e exactLog
	for i := range MaxExactAdmissions {
		e.record(int64(i), 1, 1)
	}
	if len(e.kept()) != MaxExactAdmissions {
		t.Fatalf("kept %d", len(e.kept()))
	}
	e.record(1, 1, 1)
	e.record(2, 1, 1)
	if e.kept() != nil || e.admissions != nil {
		t.Fatal("a log past its bound still holds admissions")
	}
}
