package docs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/cmd"
)

// TestReadmeShellBlocksRun runs every rlsim command of README.md's sh blocks: commands
// shown without their output (because it is long, or is explained in the prose) must
// still run as written and succeed.
func TestReadmeShellBlocksRun(t *testing.T) {
	t.Setenv("RLSIM_REDIS_URL", "")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	in := false
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			in = trimmed == "```sh"
			continue
		case !in || !strings.HasPrefix(trimmed, "rlsim "):
			continue
		}
		args, err := split(strings.TrimPrefix(trimmed, "rlsim "))
		if err != nil {
			t.Fatalf("README.md:%d: %v", i+1, err)
		}
		if len(args) > 0 && (args[0] == "serve" || args[0] == "probe") {
			continue // a server, or a probe of one: shown, run by their own tests
		}
		n++
		run(t, root, append(args, "--out", ""))
		t.Logf("README.md:%d: rlsim %s: ok", i+1, strings.Join(args, " "))
	}
	if n == 0 {
		t.Fatal("README.md has no rlsim command in a sh block: the test reads nothing")
	}
}

// inlineCommand is an rlsim command written in a page's prose or tables.
var inlineCommand = regexp.MustCompile("`rlsim( [^`]*)?`")

// placeholderRE is a value left to the reader, in capitals: URL, N, or the end of one
// (redis://127.0.0.1:PORT).
var placeholderRE = regexp.MustCompile(`(^|[:/])[A-Z]+$`)

// TestInlineCommandsParse holds every `rlsim …` code span of README.md and docs/ to the
// command line: the command exists and takes the flags the span gives (each is parsed,
// with --help, so nothing runs). A placeholder in capitals (URL, NAME) is left as written
// where it is an argument, which --help does not read. Notation is skipped: a span with
// alternatives (zsh|fish, run/compare), an ellipsis, a placeholder as a flag's value
// (--redis URL), or a flag named without its value (rlsim replay --shard).
func TestInlineCommandsParse(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tree := cmd.NewRoot(cmd.IO{})
	parsed := 0
	for _, page := range docFiles(t, root) {
		lines := readPage(t, root, page)
		blocks, err := fences(lines)
		if err != nil {
			t.Fatalf("%s:%v", page, err)
		}
		for _, span := range inlineCommand.FindAllString(strings.Join(outsideFences(lines, blocks), "\n"), -1) {
			line := strings.Join(strings.Fields(strings.Trim(span, "`")), " ")
			if strings.ContainsAny(line, "|…") || strings.Contains(line, "...") {
				continue // notation (zsh|fish, a value left out), not a command line
			}
			args, err := split(strings.TrimPrefix(line, "rlsim"))
			if err != nil {
				t.Errorf("%s: %s: %v", page, span, err)
				continue
			}
			if notation(tree, args) {
				continue
			}
			parsed++
			var out, errb bytes.Buffer
			if code := cmd.Main(append(args, "--help"), cmd.IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
				t.Errorf("%s: %s does not parse: exit %d: %s", page, span, code, errb.String())
			}
		}
	}
	if parsed < 50 {
		t.Fatalf("parsed %d rlsim code spans in README.md and docs/; the pattern reads too few", parsed)
	}
}

// notation reports whether args name commands and flags rather than give a command line:
// alternatives in the command's name (run/compare) or a placeholder for it, a flag whose value is a placeholder
// (--redis URL) or is left out (the span ends at a flag that takes one).
func notation(tree *cobra.Command, args []string) bool {
	if len(args) > 0 && (strings.Contains(args[0], "/") || placeholderRE.MatchString(args[0])) {
		return true // rlsim run/compare, rlsim COMMAND
	}
	c, _, err := tree.Find(args)
	if err != nil {
		return false // an unknown command: let the parse say so
	}
	for i, a := range args {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") || hasValue {
			continue
		}
		f := c.Flags().Lookup(name)
		if f == nil || f.NoOptDefVal != "" {
			continue // unknown (the parse says so) or a switch, which takes no value
		}
		if i+1 == len(args) || placeholderRE.MatchString(args[i+1]) {
			return true
		}
	}
	return false
}
