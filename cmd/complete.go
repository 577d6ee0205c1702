package cmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/backoff"
	"github.com/rlsim/rlsim/gateway"
	"github.com/rlsim/rlsim/render/chart"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/store"
	"github.com/rlsim/rlsim/sweep"
	"github.com/rlsim/rlsim/traffic"
)

// keyKinds are the key kinds --key of compare and replay completes to; the parameterised
// ones (ipv6/N, xff:K) with their most common parameter.
var keyKinds = []string{"user", "account", "tenant", "api-key", "route", "ip", "ipv6/64", "xff:1", "xff-leftmost"}

// flagCompletions complete a flag's value, by flag name, on every command that has the flag
// (--key, whose values differ by command, is handled in keyCompletion; --format by its
// choices). A flag with none of these completes to files when it names a file, to folders
// when it names a folder, and to nothing otherwise.
var flagCompletions = map[string]cobra.CompletionFunc{
	"scenario":      completeScenario,
	"algorithms":    completeList(algorithms.Defaults()),
	"algorithm":     completeOne(algorithms.Defaults()),
	"charts":        completeCharts,
	"strategies":    completeList(traffic.BackoffNames),
	"model":         completeOne(backoff.Models),
	"retry-after":   completeOne([]string{"honor", "ignore"}),
	"hiccup-kind":   completeOne(backoff.HiccupKinds),
	"log-format":    completeOne(traffic.LogFormats()),
	"subsecond":     completeOne(traffic.Placements),
	"param":         completeParam,
	"chart-param":   completeOne(sweep.Names),
	"chart-metric":  completeOne(sweep.MetricNames()),
	"decisions":     fileCompletion,
	"import":        fileCompletion,
	"config-format": completeOne(gateway.FormatNames()),
	"series":        fileCompletion,
	"out":           dirCompletion,
	"schedule-out":  dirCompletion,
}

// argCompletions complete the positional arguments of the commands that take some.
var argCompletions = map[string]cobra.CompletionFunc{
	"rlsim run":            firstArg(completeScenario),
	"rlsim scenarios show": firstArg(completeScenario),
	"rlsim replay":         firstArg(fileCompletion),
	"rlsim import":         firstArg(fileCompletion),
	"rlsim merge":          completeExt("json"),
	"rlsim probe":          cobra.NoFileCompletions,
}

// registerCompletions gives every flag and positional argument of the tree a completion,
// so that the shell never offers file names where rlsim wants a scenario, an algorithm or
// a number.
func registerCompletions(root *cobra.Command) {
	walk(root, func(c *cobra.Command) {
		if c.Hidden || c.Name() == "completion" || (c.HasParent() && c.Parent().Name() == "completion") {
			return // cobra completes its own commands
		}
		if fn, ok := argCompletions[c.CommandPath()]; ok {
			c.ValidArgsFunction = fn
		} else if !c.HasSubCommands() && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = cobra.NoFileCompletions
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if _, ok := c.GetFlagCompletionFunc(f.Name); ok || f.Name == "help" || f.Name == "version" {
				return
			}
			// Each flag is registered once, so the error (a second registration) cannot happen.
			_ = c.RegisterFlagCompletionFunc(f.Name, flagCompletion(c, f))
		})
	})
}

// flagCompletion is the completion of the flag f of c.
func flagCompletion(c *cobra.Command, f *pflag.Flag) cobra.CompletionFunc {
	if v, ok := f.Value.(*choiceValue); ok {
		return completeOne(v.choices)
	}
	switch {
	case f.Name == "key":
		return keyCompletion(c)
	case f.Name == "algorithms" && c.Name() == "memory":
		return completeList(store.MemoryAlgorithms()) // the algorithms the store has scripts for
	}
	if fn, ok := flagCompletions[f.Name]; ok {
		return fn
	}
	return cobra.NoFileCompletions
}

// keyCompletion completes --key, which means a different thing on each command.
func keyCompletion(c *cobra.Command) cobra.CompletionFunc {
	switch c.Name() {
	case "serve":
		return completeOne([]string{"ip", "global", "header:"})
	case "backoff":
		return completeOne([]string{"shared", "client"})
	}
	return completeOne(keyKinds)
}

// completeOne completes a single value from choices.
func completeOne(choices []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, c := range choices {
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
		return out, directive(out)
	}
}

// completeList completes the last item of a comma-separated list from choices, leaving out
// the items the list already holds: "fixed-window,sl" completes to
// "fixed-window,sliding-log" and "fixed-window,sliding-window".
func completeList(choices []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var done []string
		last := toComplete
		if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
			done, last = strings.Split(toComplete[:i], ","), toComplete[i+1:]
		}
		prefix := toComplete[:len(toComplete)-len(last)]
		var out []cobra.Completion
		for _, c := range choices {
			if strings.HasPrefix(c, last) && !slices.Contains(done, c) {
				out = append(out, prefix+c)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeCharts completes --charts: "none" or a list of chart formats.
func completeCharts(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	out, d := completeList(chart.Formats)(c, args, toComplete)
	if strings.HasPrefix("none", toComplete) {
		out = append(out, "none")
	}
	return out, d
}

// completeParam completes a sweep's --param to "NAME=", leaving the values to the user.
func completeParam(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if strings.Contains(toComplete, "=") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, n := range sweep.Names {
		if strings.HasPrefix(n, toComplete) {
			out = append(out, n+"=")
		}
	}
	return out, directive(out)
}

// directive is NoFileComp, and NoSpace too when every completion ends where the user has
// more to type ("header:", "policy.limit=").
func directive(out []cobra.Completion) cobra.ShellCompDirective {
	d := cobra.ShellCompDirectiveNoFileComp
	if len(out) > 0 && !slices.ContainsFunc(out, func(c cobra.Completion) bool {
		return !strings.HasSuffix(c, ":") && !strings.HasSuffix(c, "=")
	}) {
		d |= cobra.ShellCompDirectiveNoSpace
	}
	return d
}

// completeScenario completes a scenario: the built-in names starting with what was typed,
// each with its description, and the scenario files (.yaml, .yml) and folders on that path.
func completeScenario(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if !strings.ContainsRune(toComplete, filepath.Separator) {
		for _, n := range scenario.Builtins() {
			if !strings.HasPrefix(n, toComplete) {
				continue
			}
			desc := ""
			if sc, err := scenario.Load(n); err == nil {
				desc = sc.Description
			}
			out = append(out, cobra.CompletionWithDesc(n, desc))
		}
	}
	files, hasDir := scenarioFiles(toComplete)
	out = append(out, files...)
	d := cobra.ShellCompDirectiveNoFileComp
	if hasDir {
		d |= cobra.ShellCompDirectiveNoSpace // a folder is a step on the way to a file
	}
	return out, d
}

// scenarioFiles lists the .yaml and .yml files and the folders whose path starts with
// toComplete, folders with a trailing separator; hidden ones only when toComplete names
// them.
func scenarioFiles(toComplete string) (out []cobra.Completion, hasDir bool) {
	dir, base := filepath.Split(toComplete)
	read := dir
	if read == "" {
		read = "."
	}
	entries, err := os.ReadDir(read)
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if fi, err := os.Stat(filepath.Join(read, name)); err == nil {
				isDir = fi.IsDir()
			}
		}
		switch {
		case isDir:
			out = append(out, dir+name+string(filepath.Separator))
			hasDir = true
		case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"):
			out = append(out, dir+name)
		}
	}
	return out, hasDir
}

// firstArg completes the first positional argument with fn and nothing after it.
func firstArg(fn cobra.CompletionFunc) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fn(c, args, toComplete)
	}
}

// fileCompletion leaves the completion of a file name to the shell.
func fileCompletion(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveDefault
}

// dirCompletion leaves the completion of a folder name to the shell.
func dirCompletion(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// completeExt has the shell complete files with one of the extensions.
func completeExt(exts ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return exts, cobra.ShellCompDirectiveFilterFileExt
	}
}
