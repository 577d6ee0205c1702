package docs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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

// inlineCommand is an rlsim command written in README.md's prose or tables.
var inlineCommand = regexp.MustCompile("`rlsim( [^`]*)?`")

// TestReadmeInlineCommandsParse holds every `rlsim …` code span of README.md to the
// command line: the command exists and takes the flags the span gives (each is parsed,
// with --help, so nothing runs). A placeholder in capitals (URL, NAME) is left as written:
// it is an argument, which --help does not read. A span with alternatives (zsh|fish) or
// an ellipsis is notation and is skipped.
func TestReadmeInlineCommandsParse(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	spans := inlineCommand.FindAllString(string(data), -1)
	if len(spans) < 10 {
		t.Fatalf("README.md has %d rlsim code spans; the pattern reads too few", len(spans))
	}
	for _, span := range spans {
		line := strings.Join(strings.Fields(strings.Trim(span, "`")), " ")
		if strings.ContainsAny(line, "|…") {
			continue // notation (zsh|fish, a value left out), not a command line
		}
		args, err := split(strings.TrimPrefix(line, "rlsim"))
		if err != nil {
			t.Errorf("README.md: %s: %v", span, err)
			continue
		}
		var out, errb bytes.Buffer
		if code := cmd.Main(append(args, "--help"), cmd.IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
			t.Errorf("README.md: %s does not parse: exit %d: %s", span, code, errb.String())
		}
	}
}
