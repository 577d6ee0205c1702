package report

// MaxExactAdmissions bounds the admissions a timeline keeps one by one. A run that admits
// more keeps none: its bins are what its charts draw, and its memory stays bounded.
const MaxExactAdmissions = 1 << 14

// Admission is one admitted request as a timeline keeps it: when (ns since the start),
// for which key, and the key's count in the trailing window right after it.
type Admission struct {
	T     int64
	Key   uint32
	Count int64
}

// exactLog records admissions until there are more than MaxExactAdmissions.
type exactLog struct {
	admissions []Admission
	overflow   bool
}

func (e *exactLog) record(t int64, key uint32, count int64) {
	if e.overflow {
		return
	}
	if len(e.admissions) == MaxExactAdmissions {
		e.admissions, e.overflow = nil, true
		return
	}
	e.admissions = append(e.admissions, Admission{T: t, Key: key, Count: count})
}

// kept is the log, or nil when it overflowed.
func (e *exactLog) kept() []Admission {
	if e.overflow {
		return nil
	}
	return e.admissions
}
