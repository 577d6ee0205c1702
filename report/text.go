package report

import (
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"
)

// DefaultWidth is the display width, in terminal columns, that the verdict, the default
// tables and the sentences under them keep to.
const DefaultWidth = 100

// DisplayWidth is the number of terminal columns s takes (box-drawing characters, "×" and
// "✗" take one).
func DisplayWidth(s string) int { return runewidth.StringWidth(s) }

// Wrap breaks text at spaces into lines of at most width display columns, every line after
// the first starting with indent (counted in the width). A word wider than a line (a long
// file name) keeps its own line rather than being cut.
func Wrap(text string, width int, indent string) []string {
	var lines []string
	var line strings.Builder
	lineWidth, empty := 0, true
	for _, word := range strings.Fields(text) {
		w := DisplayWidth(word)
		if !empty && lineWidth+1+w > width {
			lines = append(lines, line.String())
			line.Reset()
			line.WriteString(indent)
			lineWidth, empty = DisplayWidth(indent), true
		}
		if !empty {
			line.WriteByte(' ')
			lineWidth++
		}
		line.WriteString(word)
		lineWidth += w
		empty = false
	}
	if !empty {
		lines = append(lines, line.String())
	}
	return lines
}

// MaxLineWidth is the display width of the widest line of s.
func MaxLineWidth(s string) int {
	widest := 0
	for _, line := range strings.Split(s, "\n") {
		widest = max(widest, DisplayWidth(line))
	}
	return widest
}

// HumanBytes prints a byte count in binary units: "512 B", "3.4 GiB".
func HumanBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return strconv.FormatInt(b, 10) + " B"
	}
	v, i := float64(b), 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + []string{"B", "KiB", "MiB", "GiB", "TiB"}[i]
}
