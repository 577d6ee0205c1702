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
// against the repository's root. Every page is read: README.md and each Markdown file under
// docs/, without a list to keep.
//
// A command that is only shown, not run (a server, a probe of one, a command that reads the
// wall clock, an error), belongs in a block marked "text" (commands without a prompt or
// output, in a "sh" block); a "$ " prompt in a block of any other kind, or of none, fails
// the test, since it would be neither run nor marked as shown. So does a console block that
// holds no command, or a command other than rlsim.
//
// go test ./docs -update rewrites every transcript's output with what the command prints now.
package docs_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	indent   string // the block's fence's indentation (a block in a list item), left off each line
}

func TestTranscripts(t *testing.T) {
	// The documentation shows runs on the store's model: `rlsim claims` would otherwise
	// measure its memory claims on the server CI names here, and print that server's bytes.
	t.Setenv("RLSIM_REDIS_URL", "")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range docFiles(t, root) {
		path := filepath.Join(root, filepath.FromSlash(name))
		lines := readPage(t, root, name)
		ts, unmarked, err := parse(lines)
		if err != nil {
			t.Fatalf("%s:%v", name, err)
		}
		if len(unmarked) > 0 {
			for _, l := range unmarked {
				t.Errorf("%s:%d: a \"$ \" prompt in a block neither run nor marked shown: mark it console, to be run, or text, to be shown", name, l)
			}
		}
		total += len(ts)
		changed := false
		for i := len(ts) - 1; i >= 0; i-- { // backwards, so rewriting keeps earlier line numbers
			tr := ts[i]
			got := run(t, root, tr.args)
			if got == tr.want {
				continue
			}
			if *update {
				out := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
				for k := range out {
					out[k] = tr.indent + out[k]
				}
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
	if total < 40 {
		t.Fatalf("ran %d transcripts of README.md and docs/; the parser reads too few", total)
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

// parse finds the transcripts of a Markdown file's console blocks, and the 1-based lines of
// the other blocks but text ones that show a "$ " prompt: each is to be run (console) or
// marked as shown (text).
func parse(lines []string) (out []transcript, unmarked []int, err error) {
	blocks, err := fences(lines)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range blocks {
		start, end := b.open, b.shut
		switch b.kind() {
		case "console":
		case "text":
			continue
		default:
			for j := start + 1; j < end; j++ {
				if strings.HasPrefix(strings.TrimSpace(lines[j]), "$ ") {
					unmarked = append(unmarked, start+1)
					break
				}
			}
			continue
		}
		if end == start+1 {
			return nil, nil, fmt.Errorf("%d: an empty console block", start+1)
		}
		indent := lines[start][:len(lines[start])-len(strings.TrimLeft(lines[start], " "))]
		var cur *transcript
		for j := start + 1; j < end; j++ {
			l := strings.TrimPrefix(lines[j], indent)
			if !strings.HasPrefix(l, "$ ") {
				if cur == nil {
					return nil, nil, fmt.Errorf("%d: a console block starts with a \"$ rlsim\" line", j+1)
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
				return nil, nil, fmt.Errorf("%d: %v", first+1, err)
			}
			if len(words) == 0 || words[0] != "rlsim" {
				return nil, nil, fmt.Errorf("%d: a console block runs rlsim commands only; show other commands in a sh block", first+1)
			}
			out = append(out, transcript{line: first + 1, args: words[1:], from: j + 1, indent: indent})
			cur = &out[len(out)-1]
		}
		if cur != nil {
			cur.to = end
		}
	}
	for i := range out {
		tr := &out[i]
		if tr.to > tr.from {
			var want []string
			for _, l := range lines[tr.from:tr.to] {
				want = append(want, strings.TrimPrefix(l, tr.indent))
			}
			tr.want = strings.Join(want, "\n") + "\n"
		}
	}
	return out, unmarked, nil
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

// TestParseRefusesWhatItCannotRun: parse finds console blocks however their fence is
// written, and reports what it would otherwise pass over without a word.
func TestParseRefusesWhatItCannotRun(t *testing.T) {
	page := func(s string) []string { return strings.Split(s, "\n") }
	ts, unmarked, err := parse(page("- a list item:\n\n  ```Console\n  $ rlsim algorithms\n  out\n  ```\n\n```text\n$ rlsim serve\n```\n\n```\n$ rlsim headers\n```\n\n```sh\n$ rlsim run x\n```"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].line != 4 || strings.Join(ts[0].args, " ") != "algorithms" || ts[0].want != "out\n" {
		t.Errorf("transcripts %+v, want the indented Console block's rlsim algorithms at line 4, showing \"out\"", ts)
	}
	if !slices.Equal(unmarked, []int{12, 16}) {
		t.Errorf("blocks with a prompt, neither run nor marked text, at lines %v; want [12 16]", unmarked)
	}
	for _, bad := range []string{
		"```console\n```",                     // empty
		"```console\nout\n```",                // output without a command
		"```console\n$ ls\n```",               // not rlsim
		"```console\n$ rlsim run x | wc\n```", // a pipe
		"```console\n$ rlsim algorithms\n",    // never closed
	} {
		if _, _, err := parse(page(bad)); err == nil {
			t.Errorf("parse(%q) gives no error", bad)
		}
	}
}
