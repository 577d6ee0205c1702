package cmd

import (
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlsim/rlsim/report"
)

// setHelpTemplates makes every command's help keep to report.DefaultWidth columns: the
// description and the flags wrapped at spaces, and each example command longer than a
// line continued on the next with a backslash, so that it still runs when pasted.
func setHelpTemplates(root *cobra.Command) {
	// cobra keeps template functions in one map for the process: they are added once,
	// not by each root (tests build roots concurrently).
	addTemplateFuncs.Do(func() {
		width := report.DefaultWidth
		cobra.AddTemplateFunc("wrapFlags", func(fs *pflag.FlagSet) string { return fs.FlagUsagesWrapped(width) })
		cobra.AddTemplateFunc("wrapText", func(s string) string { return wrapParagraphs(s, width) })
		cobra.AddTemplateFunc("wrapExample", func(s string) string { return wrapExample(s, width) })
	})
	u := root.UsageTemplate()
	u = strings.ReplaceAll(u, ".LocalFlags.FlagUsages", "wrapFlags .LocalFlags")
	u = strings.ReplaceAll(u, ".InheritedFlags.FlagUsages", "wrapFlags .InheritedFlags")
	u = strings.ReplaceAll(u, "{{.Example}}", "{{wrapExample .Example}}")
	root.SetUsageTemplate(u)
	h := root.HelpTemplate()
	h = strings.ReplaceAll(h, "{{. | trimTrailingWhitespaces}}", "{{wrapText . | trimTrailingWhitespaces}}")
	root.SetHelpTemplate(h)
}

var addTemplateFuncs sync.Once

// wrapParagraphs wraps each line of s longer than width, keeping its indentation.
func wrapParagraphs(s string, width int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if report.DisplayWidth(line) <= width {
			out = append(out, line)
			continue
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		out = append(out, report.Wrap(strings.TrimLeft(line, " "), width-len(indent), "")...)
		for i := len(out) - 1; i >= 0 && !strings.HasPrefix(out[i], indent); i-- {
			out[i] = indent + out[i]
		}
	}
	return strings.Join(out, "\n")
}

// wrapExample wraps an example: a comment line as text, under its "#", and a command
// line at spaces with a backslash at the end of each line it continues.
func wrapExample(s string, width int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := line[:len(line)-len(trimmed)]
		switch {
		case report.DisplayWidth(line) <= width:
			out = append(out, line)
		case strings.HasPrefix(trimmed, "#"):
			for _, l := range report.Wrap(strings.TrimSpace(strings.TrimPrefix(trimmed, "#")), width-len(indent)-2, "") {
				out = append(out, indent+"# "+l)
			}
		default:
			lines := report.Wrap(trimmed, width-len(indent)-2, "    ")
			for i, l := range lines {
				if i < len(lines)-1 {
					l += " \\"
				}
				out = append(out, indent+l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// newColumnsTopic is `rlsim help columns`: the machine names --columns takes, too many
// for a flag's line.
func newColumnsTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "columns",
		Short: "The columns --columns can show (compare, run, replay)",
		Long: "--columns names the columns the tables show after the algorithm, comma-separated; " +
			"without it a table shows those that matter for each scenario, within 100 columns, and --wide shows " +
			"every one. The machine formats (json, csv) always carry every column. The names:\n\n" +
			"  " + strings.Join(report.Wrap(strings.Join(report.ColumnNames(), ", "), report.DefaultWidth-2, "  "), "\n"),
	}
}
