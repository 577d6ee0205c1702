// Package docs_test runs the command transcripts of README.md and docs/*.md, so that what
// the documentation shows is what rlsim prints today.
//
// A transcript is a fenced block whose info string is "console":
//
//	```console
//	$ rlsim compare --scenario boundary-burst --format markdown
//	...what the command prints on stdout...
//	```
//
// Each "$ " line is one rlsim command (a trailing backslash continues it on the next line;
// arguments are split as a shell splits words, with single and double quotes); the lines up
// to the next "$ " line or the end of the block are its standard output, compared byte for
// byte. Commands run in-process in an empty temporary folder, so result files never land in
// the checkout; an argument naming a file of the repository (scenarios/x.yaml) is resolved
// against the repository's root. A command that is only shown, not run (a server, a command
// that reads the wall clock), belongs in a block of another kind ("sh", "text").
//
// go test ./docs -update rewrites every transcript's output with what the command prints now.
package docs_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/cmd"
)

var update = flag.Bool("update", false, "rewrite the transcripts' output with what the commands print now")

// transcript is one "$ rlsim ..." command of a console block and the output shown under it.
type transcript struct {
	line     int // 1-based line of the "$ " line in its file
	args     []string
	want     string // the output as the file shows it
	from, to int    // the output's lines in the file: [from, to), 0-based
}

func TestTranscripts(t *testing.T) {
	// The documentation shows runs on the store's model: `rlsim claims` would otherwise
	// measure its memory claims on the server CI names here, and print that server's bytes.
	t.Setenv("RLSIM_REDIS_URL", "")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for _, path := range files {
		name, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		ts, err := parse(lines)
		if err != nil {
			t.Fatalf("%s:%v", name, err)
		}
		changed := false
		for i := len(ts) - 1; i >= 0; i-- { // backwards, so rewriting keeps earlier line numbers
			tr := ts[i]
			got := run(t, root, tr.args)
			if got == tr.want {
				continue
			}
			if *update {
				out := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
				if got == "" {
					out = nil
				}
				lines = append(lines[:tr.from], append(out, lines[tr.to:]...)...)
				changed = true
				continue
			}
			t.Errorf("%s:%d: $ rlsim %s\nprints (go test ./docs -update rewrites the file):\n%s\nbut the file shows:\n%s",
				name, tr.line, strings.Join(tr.args, " "), got, tr.want)
		}
		if changed {
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// run runs rlsim with args in a fresh temporary folder and returns its standard output;
// a command that fails fails the test.
func run(t *testing.T, root string, args []string) string {
	t.Helper()
	resolved := make([]string, len(args))
	for i, a := range args {
		resolved[i] = a
		if p := filepath.Join(root, a); !strings.HasPrefix(a, "-") && strings.Contains(a, "/") && exists(p) {
			resolved[i] = p
		}
		// So is one inside a command (--limiter-exec 'python3 examples/exec/x.py').
		if words := strings.Fields(a); len(words) > 1 {
			for j, w := range words {
				if p := filepath.Join(root, w); strings.Contains(w, "/") && exists(p) {
					words[j] = p
				}
			}
			resolved[i] = strings.Join(words, " ")
		}
	}
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	if code := cmd.Main(resolved, cmd.IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("$ rlsim %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// parse finds the transcripts of a Markdown file's console blocks.
func parse(lines []string) ([]transcript, error) {
	var out []transcript
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```console" {
			continue
		}
		start := i
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == "```" {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("%d: console block is never closed", start+1)
		}
		var cur *transcript
		for j := start + 1; j < end; j++ {
			l := lines[j]
			if !strings.HasPrefix(l, "$ ") {
				if cur == nil {
					return nil, fmt.Errorf("%d: a console block starts with a \"$ rlsim\" line", j+1)
				}
				continue
			}
			if cur != nil {
				cur.to = j
			}
			first := j
			cmdline := strings.TrimPrefix(l, "$ ")
			for strings.HasSuffix(cmdline, `\`) && j+1 < end {
				j++
				cmdline = strings.TrimSuffix(cmdline, `\`) + " " + strings.TrimSpace(lines[j])
			}
			words, err := split(cmdline)
			if err != nil {
				return nil, fmt.Errorf("%d: %v", first+1, err)
			}
			if len(words) == 0 || words[0] != "rlsim" {
				return nil, fmt.Errorf("%d: a console block runs rlsim commands only; show other commands in a sh block", first+1)
			}
			out = append(out, transcript{line: first + 1, args: words[1:], from: j + 1})
			cur = &out[len(out)-1]
		}
		if cur != nil {
			cur.to = end
		}
		i = end
	}
	for i := range out {
		tr := &out[i]
		if tr.to > tr.from {
			tr.want = strings.Join(lines[tr.from:tr.to], "\n") + "\n"
		}
	}
	return out, nil
}

// split splits a command line into words as a shell does for plain words and single- or
// double-quoted strings (no variables, no escapes inside single quotes).
func split(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unclosed %c quote", c)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '|' || c == '>' || c == '<' || c == ';' || c == '&':
			return nil, fmt.Errorf("shell syntax %q in a console block; show it in a sh block", c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
