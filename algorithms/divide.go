package algorithms

// divisor divides by a fixed positive d, exactly, with a multiplication by 1/d and a
// correction instead of a hardware division, which costs several times as much on the
// decision path of a product's model (nginx's delay, HAProxy's weighted read). Below
// 2^50 the product a·(1/d) in float64 is within one of ⌊a/d⌋, and one comparison each
// way puts it right; larger numerators take the hardware division.
type divisor struct {
	d   int64
	inv float64
}

func newDivisor(d int64) divisor { return divisor{d: d, inv: 1 / float64(d)} }

// div returns ⌊a/d⌋ for a ≥ 0.
func (v divisor) div(a int64) int64 {
	if a >= 1<<50 {
		return a / v.d
	}
	q := int64(float64(a) * v.inv)
	if q*v.d > a {
		q--
	} else if (q+1)*v.d <= a {
		q++
	}
	return q
}
