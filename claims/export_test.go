package claims

// Flip is one measurement moved across its claim's thresholds and the verdict its rule
// must then give, for the external tests.
type Flip struct {
	Measurement Measurement
	Want        Verdict
}

// Flips returns the flips of the claim id and whether it has any.
func Flips(id string, r Result) ([]Flip, bool) {
	f, ok := flips[id]
	if !ok {
		return nil, false
	}
	var out []Flip
	for _, x := range f(r.measurement) {
		out = append(out, Flip{x.m, x.want})
	}
	return out, true
}

// MeasurementOf is the typed measurement behind a result.
func MeasurementOf(r Result) Measurement { return r.measurement }

// WrapForTest exposes the text wrapper.
var WrapForTest = wrap
