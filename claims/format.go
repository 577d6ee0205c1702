package claims

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/scenario"
)

// pct prints a rate as a percentage with three significant digits, for the measured text.
func pct(v float64) string {
	return strconv.FormatFloat(v*100, 'g', 3, 64) + "%"
}

// clock prints an offset from the default epoch as a time of day, as the notes write times.
func clock(d time.Duration) string {
	return scenario.DefaultEpoch.Add(d).Format("15:04:05.000")
}

// The cell formats below are the ones rlsim's text tables print, so that a figure a claim
// cites can be found in its command's output; the claims' figures test checks that they
// still agree.

// cellInt is a count as tables print it.
func cellInt(v int64) string { return strconv.FormatInt(v, 10) }

// cellRatio is a ratio such as over_admission: two decimals.
func cellRatio(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// cellCSV is v as `--format csv` prints it: the shortest decimal that reads back as v.
// The backoff claims cite their commands' CSV, which carries every figure (the table keeps
// to the columns a terminal has room for).
func cellCSV(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// cellFixed is v with prec decimals, as the tables print their means.
func cellFixed(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// optional returns *v, or 0 when the run had no request of that class.
func optional(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// either joins the two sides of a Depends regime: where the claim holds, and where it fails.
func either(holds, fails []string) string {
	return "holds " + strings.Join(holds, " and ") + "; fails " + strings.Join(fails, " and ")
}

// ratioOf is a/b, or 0 when b is 0.
func ratioOf(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// times prints a ratio as "3.2×".
func times(v float64) string { return fmt.Sprintf("%.3g×", v) }
