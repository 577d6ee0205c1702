package algorithms

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The values of a product's spec, read in the product's own units. Each reader returns the
// default when the spec leaves the parameter out, and otherwise an error that names the
// parameter, the unit it wants and what it got; Parse prefixes the product's name.

// maxCount is the largest count a spec may give: 2⁵³, the largest whole number a
// float64 (and a JavaScript number) holds exactly, and far above any product's own limit.
const maxCount = 1 << 53

// count reads a whole number of the product's units (requests, tokens, points) of at
// least least and at most maxCount.
func (a Args) count(name, unit string, def, least int64) (int64, error) {
	v, ok := a[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < least || n > maxCount {
		return 0, fmt.Errorf("%s: want a whole number of %s, at least %d and at most 2⁵³, got %q", name, unit, least, v)
	}
	return n, nil
}

// duration reads a Go duration ("1s", "250ms", "1m30s") of at least least.
func (a Args) duration(name string, def, least time.Duration) (time.Duration, error) {
	v, ok := a[name]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < least {
		return 0, fmt.Errorf("%s: want a duration of at least %s (as 1s, 500ms, 1m), got %q", name, least, v)
	}
	return d, nil
}

// seconds reads a number of seconds written as the product writes it ("60", "0.5"), in
// whole milliseconds, of at least least; it returns milliseconds.
func (a Args) seconds(name string, def, least int64) (int64, error) {
	v, ok := a[name]
	if !ok {
		return def, nil
	}
	bad := fmt.Errorf("%s: want a number of seconds in whole milliseconds (as 60 or 0.25), at least %s s, got %q",
		name, strconv.FormatFloat(float64(least)/1000, 'f', -1, 64), v)
	whole, frac, _ := strings.Cut(v, ".")
	if whole == "" || len(frac) > 3 || strings.ContainsAny(whole+frac, "+-") {
		return 0, bad
	}
	s, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || s > math.MaxInt64/1000/1_000_000 {
		return 0, bad
	}
	ms := s * 1000
	if frac != "" {
		f, err := strconv.ParseUint(frac+strings.Repeat("0", 3-len(frac)), 10, 64)
		if err != nil {
			return 0, bad
		}
		ms += int64(f)
	}
	if ms < least {
		return 0, bad
	}
	return ms, nil
}

// msFloor is ⌊now/1ms⌋: the millisecond a clock of millisecond resolution (Date.now(),
// nginx's) reads at now, in nanoseconds since the Unix epoch.
func msFloor(now int64) int64 { return floorDiv(now, int64(time.Millisecond)) }

// msToNs converts milliseconds since the Unix epoch to nanoseconds, saturating.
func msToNs(ms int64) int64 {
	switch {
	case ms > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	case ms < math.MinInt64/int64(time.Millisecond):
		return math.MinInt64
	}
	return ms * int64(time.Millisecond)
}

// spanOf is the span a bound is asked over: span, or the policy's window when span is not
// positive, as for the textbook algorithms.
func spanOf(p Policy, span time.Duration) time.Duration {
	if span <= 0 {
		return p.Window
	}
	return span
}

// windowsMet is the most windows of length w that don't overlap an interval of length
// span can meet: ⌈span/w⌉+1.
func windowsMet(span, w time.Duration) int64 {
	return (int64(span)+int64(w)-1)/int64(w) + 1
}
