package traffic

import (
	"testing"
	"time"
)

// TestMonthOfEveryMonth holds monthOf to the time package's names of the twelve months,
// and refuses what is not one of them exactly.
func TestMonthOfEveryMonth(t *testing.T) {
	for m := time.January; m <= time.December; m++ {
		name := m.String()[:3]
		if got, ok := monthOf([]byte(name)); !ok || got != int64(m) {
			t.Errorf("monthOf(%q) = %d, %v, want %d", name, got, ok, m)
		}
	}
	for _, bad := range []string{"", "Ja", "jan", "JAN", "Janu", "Jam", "anF", "Dez", "eb\x00"} {
		if got, ok := monthOf([]byte(bad)); ok {
			t.Errorf("monthOf(%q) = %d, want none", bad, got)
		}
	}
}
