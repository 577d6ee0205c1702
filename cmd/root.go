// Package cmd holds rlsim's command line. Each command is an options struct, a constructor
// that builds the cobra command and only fills the options, and a run function that holds
// the behaviour and writes only to the streams it is given.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// IO is everything from outside the process a command touches, so tests can use buffers.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// usageError is a mistake in the command line; it exits with status 2. When help names a
// command, the message ends by pointing at that command's --help.
type usageError struct {
	err  error
	help string // command path, such as "rlsim compare"; empty: no pointer
}

func (e usageError) Error() string {
	if e.help == "" {
		return e.err.Error()
	}
	return fmt.Sprintf("%v; see '%s --help'", e.err, e.help)
}

func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...)}
}

// cmdlineErrorf is a usage error in the shape of the command line (a command, flag or
// argument that does not fit c), which points at c's --help.
func cmdlineErrorf(c *cobra.Command, format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...), help: c.CommandPath()}
}

// Execute runs rlsim with the process's arguments and streams and returns its exit status.
func Execute() int {
	return Main(os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// Main runs rlsim with args and returns the exit status: 0 on success, 1 when the run
// failed, 2 for a bad command line, or the status an error names (128 + a signal's number
// for a run a signal stopped). An error is one line on stderr.
func Main(args []string, streams IO) int {
	root := NewRoot(streams)
	root.SetArgs(args)
	ran, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var ue usageError
	if !errors.As(err, &ue) && ran == root {
		// The root runs nothing itself, so an error that stops there is cobra's
		// "unknown command", which it does not mark as a usage error.
		err = unknownCommand(root, args)
	}
	fmt.Fprintf(streams.Err, "rlsim: %v\n", err)
	if errors.As(err, &ue) {
		return 2
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return 1
}

// unknownCommand is the error for a first word that names no command, on one line with the
// commands it may have meant.
func unknownCommand(root *cobra.Command, args []string) error {
	word := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			word = a
			break
		}
	}
	if word == "" {
		return cmdlineErrorf(root, "no command given")
	}
	msg := fmt.Sprintf("unknown command %q for %q", word, root.CommandPath())
	if s := root.SuggestionsFor(word); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", orList(quoted(s)))
	}
	return cmdlineErrorf(root, "%s", msg)
}

func quoted(xs []string) []string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return q
}

// NewRoot builds the command tree.
func NewRoot(streams IO) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "rlsim",
		Short: "Simulate rate limiters against real traffic shapes, in virtual time",
		Long: `rlsim replays scripted, generated or recorded traffic against every rate-limit
algorithm, keying policy and deployment layout in virtual time, and reports how much got
through that should not have, who was refused that should not have been, and what each
choice costs.

Exit status: 0 success, 1 a run that failed, 2 a bad command line, 130/143 interrupted.`,
		Example: `  # every built-in scenario against every algorithm; tables here, results and charts in out/
  rlsim compare

  # the fixed window admitting 200 within 200 ms under a limit of 100 per minute
  rlsim compare --scenario boundary-burst

  # the built-in scenarios, and one of them as a file to start your own from
  rlsim scenarios
  rlsim scenarios show boundary-burst

  rlsim --version`,
		Version:       buildVersion(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	// Suggestions for a mistyped command go into the one-line error (unknownCommand).
	root.DisableSuggestions = true
	root.SuggestionsMinimumDistance = 2
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.SetFlagErrorFunc(flagError)

	root.AddCommand(newCompareCmd(g, streams), newRunCmd(g, streams), newScenariosCmd(g, streams))
	root.AddCommand(newBackoffCmd(g, streams), newHeadersCmd(g, streams), newServeCmd(g, streams), newProbeCmd(g, streams))
	root.AddCommand(newReplayCmd(g, streams), newImportCmd(g, streams), newIdentifyCmd(g, streams))
	root.AddCommand(newWorstCaseCmd(g, streams))
	root.AddCommand(newClaimsCmd(g, streams))
	root.AddCommand(newMemoryCmd(g, streams), newSlotsCmd(g, streams))
	root.AddCommand(newSweepCmd(g, streams), newMergeCmd(g, streams))
	root.AddCommand(newTuneCmd(g, streams))

	root.AddCommand(newAlgorithmsCmd(g, streams))
	root.AddCommand(newColumnsTopic())
	setHelpTemplates(root)
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	describeCompletionCmd(root)
	walk(root, func(c *cobra.Command) {
		if c != root {
			c.Args = usageArgs(c.Args)
		}
	})
	registerCompletions(root)
	return root
}

// walk calls fn on c and every command under it; a help topic (rlsim help columns) is no
// command, and is left out.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		if !sub.IsAdditionalHelpTopicCommand() {
			walk(sub, fn)
		}
	}
}

// usageArgs makes any error of a positional-arguments check a usage error (exit 2),
// whoever wrote the check (cobra's own commands use cobra's).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	if check == nil {
		check = cobra.ArbitraryArgs
	}
	return func(c *cobra.Command, args []string) error {
		err := check(c, args)
		var ue usageError
		if err == nil || errors.As(err, &ue) {
			return err
		}
		return cmdlineErrorf(c, "%v", err)
	}
}

// flagError turns a flag the command line got wrong (unknown, a bad value, a missing
// value) into a one-line usage error naming the flag and the command.
// passwordInURL finds the password of a URL in a message: scheme://user:PASSWORD@.
var passwordInURL = regexp.MustCompile(`([a-z][a-z0-9+.-]*://[^:/@\s"]*:)[^@\s"]*@`)

func flagError(c *cobra.Command, err error) error {
	// A flag's error quotes its value: a Redis URL's password must not be shown.
	msg := passwordInURL.ReplaceAllString(err.Error(), "${1}xxxxx@")
	if name, ok := strings.CutPrefix(msg, "unknown flag: "); ok {
		msg = fmt.Sprintf("unknown flag %s for %q", name, c.CommandPath())
	} else if short, ok := strings.CutPrefix(msg, "unknown shorthand flag: "); ok {
		msg = fmt.Sprintf("unknown shorthand flag %s for %q", short, c.CommandPath())
	}
	return cmdlineErrorf(c, "%s", msg)
}

// newHelpCmd is `rlsim help [command]`, which unlike cobra's own refuses a command that
// does not exist (exit 2) instead of printing the root's usage.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "help prints the help of the command named, as `rlsim COMMAND --help` does.",
		Example: `  rlsim help compare
  rlsim help scenarios show`,
		Args: argCount(0, -1),
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			parent, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range parent.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return cmdlineErrorf(c.Root(), "no help for %q: unknown command", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}

// describeCompletionCmd gives cobra's `completion` command and its shells examples, and
// makes it runnable (printing its help), so that an unknown shell is refused by its
// arguments check instead of printing the help.
func describeCompletionCmd(root *cobra.Command) {
	completion, _, err := root.Find([]string{"completion"})
	if err != nil || completion == root {
		return
	}
	completion.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	completion.Example = `  # bash: load into this shell, or add the line to ~/.bashrc
  source <(rlsim completion bash)

  # zsh: install for every new shell
  rlsim completion zsh > "${fpath[1]}/_rlsim"

  # fish
  rlsim completion fish > ~/.config/fish/completions/rlsim.fish`
	examples := map[string]string{
		"bash":       "  source <(rlsim completion bash)\n  rlsim completion bash > /etc/bash_completion.d/rlsim",
		"zsh":        "  rlsim completion zsh > \"${fpath[1]}/_rlsim\"",
		"fish":       "  rlsim completion fish > ~/.config/fish/completions/rlsim.fish",
		"powershell": "  rlsim completion powershell | Out-String | Invoke-Expression",
	}
	for _, sh := range completion.Commands() {
		if ex, ok := examples[sh.Name()]; ok {
			sh.Example = ex
		}
	}
}
