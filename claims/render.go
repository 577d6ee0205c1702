package claims

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rlsim/rlsim/report"
)

// Columns are the fields of a claim, in the order every format prints them.
var Columns = []string{"id", "claim", "section", "measured", "verdict", "regime", "command"}

// field returns one field of a result by column name.
func (r Result) field(column string) string {
	switch column {
	case "id":
		return r.ID
	case "claim":
		return r.Claim
	case "section":
		return r.Section
	case "measured":
		return r.Measured
	case "verdict":
		return string(r.Verdict)
	case "regime":
		return r.Regime
	}
	return r.Command
}

// Table is the results as a table of the given columns (Columns when empty). For Markdown,
// each command is set as code.
func Table(results []Result, columns []string, markdown bool) report.Table {
	if len(columns) == 0 {
		columns = Columns
	}
	t := report.Table{Header: columns, Prose: true}
	for _, r := range results {
		var row []string
		for _, c := range columns {
			v := r.field(c)
			if markdown && c == "command" {
				v = "`" + strings.ReplaceAll(v, "; ", "`; `") + "`"
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Count is one sentence counting the verdicts, in the vocabulary's order.
func Count(results []Result) string {
	var parts []string
	for _, v := range Verdicts {
		n := 0
		for _, r := range results {
			if r.Verdict == v {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	noun := "claims"
	if len(results) == 1 {
		noun = "claim"
	}
	return fmt.Sprintf("%d %s: %s.", len(results), noun, strings.Join(parts, ", "))
}

// WriteText prints one block per claim, no line wider than width runes: a heading with its
// number, ID and verdict, then each other chosen field under a label, wrapped; each
// command of a claim starts a line, and a command too long for one continues on the next
// after a backslash, as a shell reads it. The verdict count ends it.
func WriteText(w io.Writer, results []Result, columns []string, width int) error {
	if len(columns) == 0 {
		columns = Columns
	}
	const indent = "   "
	labelWidth := 0
	for _, c := range columns {
		if c != "id" && c != "verdict" {
			labelWidth = max(labelWidth, len(c)+2)
		}
	}
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		head := fmt.Sprintf("%d.", i+1)
		if slices.Contains(columns, "id") {
			head += " " + r.ID
		}
		switch {
		case slices.Contains(columns, "verdict") && slices.Contains(columns, "id"):
			head += ": " + string(r.Verdict)
		case slices.Contains(columns, "verdict"):
			head += " " + string(r.Verdict)
		}
		for _, line := range wrap(head, width, indent) {
			b.WriteString(line + "\n")
		}
		for _, c := range columns {
			if c == "id" || c == "verdict" {
				continue
			}
			label := indent + fmt.Sprintf("%-*s", labelWidth, c+":")
			hang := strings.Repeat(" ", len(label))
			var lines []string
			if c == "command" {
				for _, cmd := range strings.Split(r.Command, "; ") {
					lines = append(lines, wrapCommand(cmd, width-len(hang))...)
				}
			} else {
				lines = wrap(r.field(c), width-len(hang), "")
			}
			if len(lines) == 0 {
				lines = []string{"-"}
			}
			for j, line := range lines {
				if j == 0 {
					b.WriteString(label + line + "\n")
				} else {
					b.WriteString(hang + line + "\n")
				}
			}
		}
	}
	b.WriteString(Count(results) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap breaks text at spaces into lines of at most width runes, every line after the first
// starting with indent (counted in the width); a word longer than a line is cut.
func wrap(text string, width int, indent string) []string {
	var lines []string
	ind := []rune(indent)
	var line []rune
	start := 0 // line holds no word while len(line) == start
	next := func() {
		lines = append(lines, string(line))
		line, start = slices.Clone(ind), len(ind)
	}
	for _, word := range strings.Fields(text) {
		rest := []rune(word)
		for len(rest) > 0 {
			gap := 0
			if len(line) > start {
				gap = 1
			}
			switch {
			case len(line)+gap+len(rest) <= width:
				if gap == 1 {
					line = append(line, ' ')
				}
				line, rest = append(line, rest...), nil
			case len(line) > start:
				next()
			default: // the word alone is wider than a line
				n := max(width-len(line), 1)
				line, rest = append(line, rest[:n]...), rest[n:]
				next()
			}
		}
	}
	if len(line) > start {
		lines = append(lines, string(line))
	}
	return lines
}

// wrapCommand breaks a command line at spaces into lines of at most width runes, ending
// each continued line with " \" and indenting the rest, as a shell reads it.
func wrapCommand(cmd string, width int) []string {
	lines := wrap(cmd, width-2, "    ")
	for i := range len(lines) - 1 {
		lines[i] += " \\"
	}
	return lines
}
