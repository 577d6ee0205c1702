package report

import "github.com/rlsim/rlsim/worstcase"

// WorstCase is the JSON object of `rlsim worst-case`: the run's seed and budget, the
// policy, and per algorithm the analytic bound, what the search found at T = W and the
// schedule that did it, and the curve over window lengths T. The names are a contract.
type WorstCase struct {
	Seed    uint64            `json:"seed"`
	Budget  int               `json:"budget"`
	Policy  Policy            `json:"policy"`
	Window  Duration          `json:"window"`
	Results []WorstCaseResult `json:"results"`
}

// WorstCaseResult is one algorithm's findings.
type WorstCaseResult struct {
	Algorithm           string  `json:"algorithm"`
	AnalyticBound       float64 `json:"analytic_bound"`
	BoundFormula        string  `json:"bound_formula"`
	BoundSource         string  `json:"bound_source"`
	BoundReached        bool    `json:"bound_reached"`
	WorstWindowAdmitted int64   `json:"worst_window_admitted"`
	WorstOverAdmission  float64 `json:"worst_over_admission"`
	// PeakWindowEnd is the end of the window that held the most, from t=0.
	PeakWindowEnd Duration `json:"peak_window_end"`
	FoundBy       string   `json:"found_by"`
	// Structured and Searched count the candidates run through the limiter: the
	// structured attacks and the local search's.
	Structured int                   `json:"structured"`
	Searched   int                   `json:"searched"`
	Schedule   []WorstCaseBurst      `json:"schedule"`
	Curve      []WorstCaseCurvePoint `json:"curve"`
}

// WorstCaseBurst is one line of a schedule: Count requests at At from t=0.
type WorstCaseBurst struct {
	At    Duration `json:"at"`
	Count int64    `json:"count"`
}

// WorstCaseCurvePoint is the worst found in windows of length T.
type WorstCaseCurvePoint struct {
	T                   Duration `json:"t"`
	AnalyticBound       float64  `json:"analytic_bound"`
	WorstWindowAdmitted int64    `json:"worst_window_admitted"`
	FoundBy             string   `json:"found_by"`
}

// NewWorstCase is the document of a run's findings, one per algorithm in the order run.
func NewWorstCase(findings []worstcase.Findings, seed uint64, budget int) WorstCase {
	doc := WorstCase{Seed: seed, Budget: budget}
	for i, f := range findings {
		x := f.Worst
		if i == 0 {
			p := x.Target.Policy
			doc.Policy = Policy{Limit: p.Limit, Window: Duration(p.Window), Burst: p.EffectiveBurst()}
			doc.Window = Duration(p.Window)
		}
		r := WorstCaseResult{
			Algorithm:     x.Target.Algorithm,
			AnalyticBound: x.Bound.Value, BoundFormula: x.Bound.Formula, BoundSource: x.Bound.Source, BoundReached: x.Bound.Reached,
			WorstWindowAdmitted: x.Worst.Peak,
			WorstOverAdmission:  x.OverAdmission(),
			PeakWindowEnd:       Duration(x.Worst.PeakEnd),
			FoundBy:             x.FoundBy,
			Structured:          x.Structured,
			Searched:            x.Searched,
			Schedule:            []WorstCaseBurst{},
		}
		for _, b := range x.Schedule {
			r.Schedule = append(r.Schedule, WorstCaseBurst{At: Duration(b.At), Count: b.Count})
		}
		for _, p := range f.Curve {
			r.Curve = append(r.Curve, WorstCaseCurvePoint{T: Duration(p.Target.T), AnalyticBound: p.Bound.Value, WorstWindowAdmitted: p.Worst.Peak, FoundBy: p.FoundBy})
		}
		doc.Results = append(doc.Results, r)
	}
	return doc
}
