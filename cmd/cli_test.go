package cmd

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

// commonFlags are the flags several commands share; each command registers those it reads.
var commonFlags = []string{"format", "out", "charts", "seed", "decisions"}

// TestCommonFlagsOnlyWhereUsed pins which command takes which of the shared flags: a flag
// a command ignores must not be accepted there (it would be a silent no-op).
func TestCommonFlagsOnlyWhereUsed(t *testing.T) {
	want := map[string][]string{
		"rlsim":                {},
		"rlsim compare":        {"format", "out", "charts", "seed", "decisions"},
		"rlsim run":            {"format", "out", "charts", "seed", "decisions"},
		"rlsim replay":         {"format", "out", "charts", "seed", "decisions"},
		"rlsim import":         {"format"},
		"rlsim algorithms":     {"format"},
		"rlsim backoff":        {"format", "out", "charts", "seed"},
		"rlsim worst-case":     {"format", "out", "charts", "seed"},
		"rlsim sweep":          {"format", "out", "charts", "seed"},
		"rlsim merge":          {"format", "out", "charts"},
		"rlsim tune":           {"format", "out", "charts"},
		"rlsim memory":         {"format", "out", "charts"},
		"rlsim probe":          {"format", "seed", "decisions"},
		"rlsim identify":       {"format"},
		"rlsim claims":         {"format"},
		"rlsim slots":          {"format"},
		"rlsim headers":        {"format"},
		"rlsim scenarios":      {"format"},
		"rlsim scenarios list": {"format"},
		"rlsim scenarios show": {},
		"rlsim serve":          {},
		"rlsim help":           {},
	}
	seen := map[string]bool{}
	walk(NewRoot(IO{}), func(c *cobra.Command) {
		path := c.CommandPath()
		if c.Hidden || strings.HasPrefix(path, "rlsim completion") {
			return
		}
		seen[path] = true
		w, ok := want[path]
		if !ok {
			t.Errorf("%s: a command this test does not know; add it with the shared flags it reads", path)
			return
		}
		var got []string
		for _, f := range commonFlags {
			if c.Flags().Lookup(f) != nil {
				got = append(got, f)
			}
		}
		if !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
			t.Errorf("%s takes %v, want %v", path, got, w)
		}
		if c.HasPersistentFlags() {
			t.Errorf("%s has persistent flags; every flag belongs to the commands that use it", path)
		}
	})
	for path := range want {
		if !seen[path] {
			t.Errorf("%s: no such command", path)
		}
	}
}

// TestBadCommandLinesExitTwo runs every kind of command line rlsim must refuse: one line on
// stderr naming what and where, exit 2, nothing on stdout and no file written.
func TestBadCommandLinesExitTwo(t *testing.T) {
	t.Chdir(t.TempDir())
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "rlsim"; see 'rlsim --help'`},
		{[]string{"comapre", "--scenario", "boundary-burst"}, `unknown command "comapre" for "rlsim" (did you mean "compare"?)`},
		{[]string{"help", "bogus"}, `no help for "bogus": unknown command; see 'rlsim --help'`},
		{[]string{"scenarios", "bogus"}, `unknown command "bogus" for "rlsim scenarios"; see 'rlsim scenarios --help'`},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh" for "rlsim completion"`},
		{[]string{"run"}, `"rlsim run" needs FILE|NAME; see 'rlsim run --help'`},
		{[]string{"run", "boundary-burst", "token-burst"}, `"rlsim run" takes FILE|NAME, got 2 arguments: "boundary-burst" "token-burst"`},
		{[]string{"scenarios", "show"}, `"rlsim scenarios show" needs NAME|FILE`},
		{[]string{"merge"}, `"rlsim merge" needs FILE...`},
		{[]string{"probe"}, `"rlsim probe" needs URL`},
		{[]string{"compare", "boundary-burst"}, `"rlsim compare" takes no arguments, got "boundary-burst"; see 'rlsim compare --help'`},
		{[]string{"sweep", "x", "--scenario", "token-burst"}, `"rlsim sweep" takes no arguments, got "x"`},
		{[]string{"headers", "--out", "x"}, `unknown flag --out for "rlsim headers"; see 'rlsim headers --help'`},
		{[]string{"worst-case", "--decisions", "x.csv"}, `unknown flag --decisions for "rlsim worst-case"`},
		{[]string{"claims", "--seed", "3"}, `unknown flag --seed for "rlsim claims"`},
		{[]string{"memory", "--seed", "3"}, `unknown flag --seed for "rlsim memory"`},
		{[]string{"merge", "a.json", "--decisions", "x.csv"}, `unknown flag --decisions for "rlsim merge"`},
		{[]string{"probe", "http://127.0.0.1:1/", "--out", "x"}, `unknown flag --out for "rlsim probe"`},
		{[]string{"serve", "--format", "json"}, `unknown flag --format for "rlsim serve"`},
		{[]string{"scenarios", "show", "boundary-burst", "--format", "json"}, `unknown flag --format for "rlsim scenarios show"`},
		{[]string{"compare", "--bogus"}, `unknown flag --bogus for "rlsim compare"`},
		{[]string{"-x"}, `unknown shorthand flag 'x' in -x for "rlsim"`},
		{[]string{"compare", "--format", "xml"}, `invalid argument "xml" for "--format" flag: unknown format "xml" (want table, json, csv or markdown); see 'rlsim compare --help'`},
		{[]string{"headers", "--format", "csv"}, `unknown format "csv" (want table or json); see 'rlsim headers --help'`},
		{[]string{"compare", "--seed", "-1"}, `invalid argument "-1" for "--seed" flag`},
		{[]string{"compare", "--window", "soon"}, `invalid argument "soon" for "--window" flag`},
		{[]string{"compare", "--limit"}, `flag needs an argument: --limit; see 'rlsim compare --help'`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(tt.args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errb.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty: %q", out.String())
			}
			if e := errb.String(); !strings.HasPrefix(e, "rlsim: ") || strings.Count(e, "\n") != 1 || !strings.Contains(e, tt.want) {
				t.Errorf("stderr = %q, want one line \"rlsim: ...\" containing %q", e, tt.want)
			}
			if left, _ := os.ReadDir("."); len(left) != 0 {
				t.Errorf("files written: %v", left)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, flag := range []string{"--version", "-v"} {
		var out, errb bytes.Buffer
		code := Main([]string{flag}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != 0 || errb.Len() != 0 {
			t.Fatalf("%s: exit %d, stderr %q", flag, code, errb.String())
		}
		if want := "rlsim " + versionString(debug.ReadBuildInfo()) + "\n"; out.String() != want {
			t.Errorf("%s printed %q, want %q", flag, out.String(), want)
		}
	}
}

func TestVersionString(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	dirty := append(slices.Clone(vcs[:3]), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "(devel)"},
		{"go run", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true,
			"(devel), built with go1.26.8"},
		{"no version at all", &debug.BuildInfo{Main: debug.Module{}}, true, "(devel)"},
		{"go install of a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}}, true,
			"v1.2.0, built with go1.26.8"},
		{"a clean checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130120000-0123456789ab"}, Settings: vcs}, true,
			"v0.0.0-20261130120000-0123456789ab, commit 0123456789abcdef0123456789abcdef01234567 of 2026-11-30T12:00:00Z, built with go1.26.8"},
		{"a checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130120000-0123456789ab+dirty"}, Settings: dirty}, true,
			"v0.0.0-20261130120000-0123456789ab+dirty, commit 0123456789abcdef0123456789abcdef01234567 of 2026-11-30T12:00:00Z with uncommitted changes, built with go1.26.8"},
	}
	for _, tt := range tests {
		if got := versionString(tt.info, tt.ok); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// exampleSkips are the examples that are parsed but not run, and why.
var exampleSkips = map[string]string{
	"rlsim compare": "the whole suite takes seconds; every scenario has its own tests",
	"rlsim claims":  "takes seconds; claims has its own tests",
	"rlsim backoff": "100 runs of every strategy take a second, ten under -race; the backoff tests run smaller ones",
	"rlsim claims --format markdown --redis redis://127.0.0.1:6379/0":                                                                                                    "needs a Redis server",
	"rlsim memory --redis redis://127.0.0.1:6379/0 --prefix rlsim-memory: --load 10000":                                                                                  "needs a Redis server",
	"rlsim serve --limit 5 --window 10s --algorithm gcra --key header:X-API-Key":                                                                                         "serves until interrupted",
	"rlsim serve --addr 127.0.0.1:9090 --algorithm leaky-bucket --max-delay 2s":                                                                                          "serves until interrupted",
	"rlsim probe http://127.0.0.1:8080/ --scenario boundary-burst --time-scale 60 --key-header X-User":                                                                   "needs a live endpoint",
	"rlsim probe http://127.0.0.1:8080/api/ --scenario probe-identify.yaml --key-header X-User --model 'nginx:rate=10r/s burst=20 nodelay' --identify --decisions d.csv": "needs a live endpoint",
	"rlsim identify decisions.csv": "needs a probe's decisions file (TestIdentifyReadsAProbesDecisions)",
	"rlsim identify limits.log --key-var http_x_user --nginx-log-format '$msec $request_time $limit_req_status $uri $http_x_user'": "needs an nginx log (TestIdentifyReadsAnNginxLog)",
}

// example is one invocation of a command's Example.
type example struct {
	line     string   // as the help shows it
	args     []string // rlsim's arguments
	redirect string   // the file its output goes to ("> FILE"), if a plain name
	stdin    string   // the file its input comes from ("< FILE"), if a plain name
}

// examples reads c's Example: every line that is not blank or a comment shows one rlsim
// invocation, possibly inside shell syntax ("source <(rlsim completion bash)") and with
// its output redirected or piped.
func examples(c *cobra.Command) ([]example, error) {
	var out []example
	for _, l := range strings.Split(c.Example, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.Index(l, "rlsim ")
		if l == "rlsim" {
			i = 0
		}
		if i < 0 {
			return nil, fmt.Errorf("example %q does not run rlsim", l)
		}
		cmdline := strings.TrimPrefix(l[i:], "rlsim")
		if strings.Contains(l[:i], "<(") {
			cmdline, _, _ = strings.Cut(cmdline, ")")
		}
		cmdline, _, _ = strings.Cut(cmdline, " | ")
		cmdline, redirect, _ := strings.Cut(cmdline, " > ")
		redirect = strings.TrimSpace(redirect)
		if strings.ContainsAny(redirect, `/$~"'`) {
			redirect = "" // a path outside the test's folder: the output is dropped
		}
		cmdline, stdin, _ := strings.Cut(cmdline, " < ")
		args, err := splitWords(cmdline)
		if err != nil {
			return nil, fmt.Errorf("example %q: %v", l, err)
		}
		out = append(out, example{line: l, args: args, redirect: redirect, stdin: strings.TrimSpace(stdin)})
	}
	return out, nil
}

// splitWords splits a command line as a shell does plain words and quoted strings.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case '\'', '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unclosed %c", c)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case '|', '<', '>', ';', '&', '$', '`', '*':
			return nil, fmt.Errorf("shell syntax %q", c)
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

// TestEveryCommandHasWorkingExamples walks the command tree: every command's help shows
// examples, every example names a command, flags and arguments that exist, and every
// example but those in exampleSkips runs and succeeds, so the examples cannot drift from
// the command line.
func TestEveryCommandHasWorkingExamples(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join("testdata", "boundary.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	// The replay examples read access.log.
	if err := os.WriteFile("access.log", log, 0o644); err != nil {
		t.Fatal(err)
	}
	skipped := map[string]bool{}
	walk(NewRoot(IO{}), func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		path := c.CommandPath()
		exs, err := examples(c)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		if len(exs) == 0 {
			t.Errorf("%s has no Example", path)
			return
		}
		help, _, code := runCLI(t, append(strings.Fields(path)[1:], "--help")...)
		if code != 0 || !strings.Contains(help, "\nExamples:\n") {
			t.Errorf("%s --help (exit %d) shows no examples:\n%s", path, code, help)
		}
		for _, ex := range exs {
			if err := parses(ex.args); err != nil {
				t.Errorf("%s: example %q: %v", path, ex.line, err)
				continue
			}
			if _, ok := exampleSkips[ex.line]; ok {
				skipped[ex.line] = true
				continue
			}
			args := make([]string, len(ex.args))
			for i, a := range ex.args {
				args[i] = a
				// A file of the repository (scenarios/x.yaml) is read from the checkout.
				if p := filepath.Join(repo, a); !strings.HasPrefix(a, "-") && strings.Contains(a, "/") && fileExists(p) {
					args[i] = p
				}
				// So is one inside a command (--limiter-exec 'python3 examples/exec/x.py').
				if words := strings.Fields(a); len(words) > 1 {
					for j, w := range words {
						if p := filepath.Join(repo, w); strings.Contains(w, "/") && fileExists(p) {
							words[j] = p
						}
					}
					args[i] = strings.Join(words, " ")
				}
			}
			if c, _, err := NewRoot(IO{}).Find(args); err == nil && c.Flags().Lookup("charts") != nil {
				args = append(args, "--charts", "none") // drawing is slow under -race; the flag parsed above
			}
			var in []byte
			if ex.stdin != "" {
				if in, err = os.ReadFile(ex.stdin); err != nil {
					t.Errorf("%s: example %q: %v", path, ex.line, err)
					continue
				}
			}
			var outb, errb bytes.Buffer
			code := Main(args, IO{In: bytes.NewReader(in), Out: &outb, Err: &errb})
			out, errOut := outb.String(), errb.String()
			if code != 0 || out == "" {
				t.Errorf("%s: example %q: exit %d, %d bytes of output, stderr:\n%s", path, ex.line, code, len(out), errOut)
				continue
			}
			if ex.redirect != "" {
				if err := os.WriteFile(ex.redirect, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if forTerminal(ex) {
				for i, line := range strings.Split(out, "\n") {
					if n := utf8.RuneCountInString(line); n > 100 {
						t.Errorf("%s: example %q: line %d is %d columns, over 100: %s", path, ex.line, i+1, n, line)
						break
					}
				}
			}
		}
	})
	for line := range exampleSkips {
		if !skipped[line] {
			t.Errorf("exampleSkips names %q, which no command shows", line)
		}
	}
}

// forTerminal reports whether an example prints for a person at a terminal, whose lines
// must fit 100 columns: not a machine format (JSON, CSV), not a file's text (a shell's
// completion script, a scenario's YAML), nor a pipe's input.
func forTerminal(ex example) bool {
	if strings.Contains(ex.line, " | ") || len(ex.args) == 0 {
		return false
	}
	switch ex.args[0] {
	case "completion", "scenarios":
		return false
	}
	for i, a := range ex.args {
		if a == "--format" && i+1 < len(ex.args) && ex.args[i+1] != "table" {
			return false
		}
		if strings.HasPrefix(a, "--format=") && a != "--format=table" {
			return false
		}
	}
	return true
}

// parses checks that args name a command and that its flags and arguments are accepted,
// without running it.
func parses(args []string) error {
	root := NewRoot(IO{})
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	c.InitDefaultHelpFlag()
	c.InitDefaultVersionFlag()
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	return c.ValidateArgs(c.Flags().Args())
}

// runCLI runs rlsim in-process as it is given, with no flags added.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// complete asks rlsim for the completions of the last argument, as the shell scripts do,
// and returns them (without descriptions) and the directive.
func complete(t *testing.T, args ...string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d: %s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	d, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if !strings.HasPrefix(last, ":") || err != nil {
		t.Fatalf("__complete %v: no directive in %q", args, out)
	}
	var names []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		names = append(names, name)
	}
	return names, cobra.ShellCompDirective(d)
}

func TestCompletion(t *testing.T) {
	withPrefix := func(prefix string) []string {
		var out []string
		for _, n := range scenario.Builtins() {
			if strings.HasPrefix(n, prefix) {
				out = append(out, n)
			}
		}
		return out
	}
	const (
		noFile  = cobra.ShellCompDirectiveNoFileComp
		noSpace = cobra.ShellCompDirectiveNoSpace
	)
	t.Chdir(t.TempDir())
	tests := []struct {
		args      []string
		want      []string
		directive cobra.ShellCompDirective
	}{
		{[]string{"run", "cl"}, withPrefix("cl"), noFile},
		{[]string{"run", "boundary-burst", ""}, nil, noFile},
		{[]string{"scenarios", "show", "token"}, []string{"token-burst"}, noFile},
		{[]string{"compare", "--scenario", "boundary-"}, withPrefix("boundary-"), noFile},
		{[]string{"sweep", "--scenario", "token"}, []string{"token-burst"}, noFile},
		{[]string{"probe", "http://127.0.0.1:8080/", "--scenario", "token"}, []string{"token-burst"}, noFile},
		{[]string{"compare", "--algorithms", "s"}, []string{"sliding-log", "sliding-window"}, noFile},
		{[]string{"compare", "--algorithms", "fixed-window,sl"}, []string{"fixed-window,sliding-log", "fixed-window,sliding-window"}, noFile},
		{[]string{"replay", "a.log", "--algorithms", "gcra,sliding-log,"},
			[]string{"gcra,sliding-log,fixed-window", "gcra,sliding-log,sliding-window", "gcra,sliding-log,token-bucket", "gcra,sliding-log,leaky-bucket"}, noFile},
		{[]string{"memory", "--algorithms", "g"}, []string{"gcra"}, noFile},
		{[]string{"headers", "--algorithm", "to"}, []string{"token-bucket"}, noFile},
		{[]string{"compare", "--format", ""}, []string{"table", "json", "csv", "markdown"}, noFile},
		{[]string{"headers", "--format", ""}, []string{"table", "json"}, noFile},
		{[]string{"compare", "--key", "x"}, []string{"xff:1", "xff-leftmost"}, noFile},
		{[]string{"replay", "a.log", "--key", "ip"}, []string{"ip", "ipv6/64"}, noFile},
		{[]string{"serve", "--key", "h"}, []string{"header:"}, noFile | noSpace},
		{[]string{"backoff", "--key", ""}, []string{"shared", "client"}, noFile},
		{[]string{"compare", "--charts", ""}, []string{"png", "svg", "none"}, noFile},
		{[]string{"worst-case", "--charts", "png,"}, []string{"png,svg"}, noFile},
		{[]string{"backoff", "--strategies", "none,full"}, []string{"none,full-jitter"}, noFile},
		{[]string{"backoff", "--model", ""}, []string{"occ", "rate-limited", "overload"}, noFile},
		{[]string{"backoff", "--retry-after", "i"}, []string{"ignore"}, noFile},
		{[]string{"replay", "a.log", "--log-format", "j"}, []string{"jsonl"}, noFile},
		{[]string{"sweep", "--param", "policy.b"}, []string{"policy.burst="}, noFile | noSpace},
		{[]string{"sweep", "--chart-param", "d"}, []string{"duration"}, noFile},
		{[]string{"compare", "--limit", ""}, nil, noFile},
		{[]string{"compare", ""}, nil, noFile},
		{[]string{"compare", "--decisions", ""}, nil, cobra.ShellCompDirectiveDefault},
		{[]string{"compare", "--out", ""}, nil, cobra.ShellCompDirectiveFilterDirs},
		{[]string{"merge", ""}, []string{"json"}, cobra.ShellCompDirectiveFilterFileExt},
		{[]string{"replay", ""}, nil, cobra.ShellCompDirectiveDefault},
		{[]string{"probe", ""}, nil, noFile},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, d := complete(t, tt.args...)
			if !slices.Equal(got, tt.want) || d != tt.directive {
				t.Errorf("got %q directive %d, want %q directive %d", got, d, tt.want, tt.directive)
			}
		})
	}
}

// TestCompletionOfScenarioFiles: beside the built-in names, a scenario completes to the
// .yaml and .yml files and the folders on the path typed, and nothing else.
func TestCompletionOfScenarioFiles(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, f := range []string{"token-mine.yaml", "token-notes.txt", "sub/deep.yml", "sub/other.json", ".hidden.yaml"} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args      []string
		want      []string
		directive cobra.ShellCompDirective
	}{
		{[]string{"run", "token"}, []string{"token-burst", "token-mine.yaml"}, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"run", "s"}, append(slices.DeleteFunc(scenario.Builtins(), func(n string) bool { return !strings.HasPrefix(n, "s") }), "sub/"),
			cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace},
		{[]string{"compare", "--scenario", "sub/"}, []string{"sub/deep.yml"}, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"run", ".h"}, []string{".hidden.yaml"}, cobra.ShellCompDirectiveNoFileComp},
	}
	for _, tt := range tests {
		got, d := complete(t, tt.args...)
		if !slices.Equal(got, tt.want) || d != tt.directive {
			t.Errorf("%v: got %q directive %d, want %q directive %d", tt.args, got, d, tt.want, tt.directive)
		}
	}
}

// TestEveryFlagCompletes: no flag of rlsim's commands falls back to the shell's file
// completion unless it names a file or folder.
func TestEveryFlagCompletes(t *testing.T) {
	walk(NewRoot(IO{}), func(c *cobra.Command) {
		if c.Hidden || strings.HasPrefix(c.CommandPath(), "rlsim completion") {
			return
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Name == "version" {
				return
			}
			if _, ok := c.GetFlagCompletionFunc(f.Name); !ok {
				t.Errorf("%s --%s has no completion", c.CommandPath(), f.Name)
			}
		})
		if c.ValidArgsFunction == nil && !c.HasSubCommands() {
			t.Errorf("%s: its arguments have no completion", c.CommandPath())
		}
	})
	for _, k := range keyKinds {
		if err := scenario.ValidKey(k); err != nil {
			t.Errorf("--key completes to %q, which --key refuses: %v", k, err)
		}
	}
}

// TestReadmeCommandList holds the command list of README.md to the command tree: every
// flag a command's synopsis names exists on that command, and every flag of the command
// but the shared ones (listed once, under the synopses) is in its synopsis.
func TestReadmeCommandList(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(data), "## Commands\n\n```\n")
	if !ok {
		t.Fatal("README.md has no command list under \"## Commands\"")
	}
	block, _, _ = strings.Cut(block, "\n\n")
	flagRE := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	named := map[string]map[string]bool{}
	var current string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "rlsim ") {
			current = strings.Fields(line)[1]
			named[current] = map[string]bool{}
		}
		for _, f := range flagRE.FindAllString(line, -1) {
			named[current][strings.TrimPrefix(f, "--")] = true
		}
	}
	root := NewRoot(IO{})
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "completion" || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		flags, ok := named[c.Name()]
		if !ok {
			t.Errorf("README.md's command list lacks rlsim %s", c.Name())
			continue
		}
		for f := range flags {
			if c.Flags().Lookup(f) == nil && f != "version" {
				t.Errorf("README.md: rlsim %s --%s: no such flag", c.Name(), f)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !flags[f.Name] && !slices.Contains(commonFlags, f.Name) && f.Name != "help" {
				t.Errorf("README.md: the synopsis of rlsim %s lacks --%s", c.Name(), f.Name)
			}
		})
	}
}

// docs/reliability.md backs each case with tests by name: every name it gives is a test
// of the repository.
func TestReliabilityPageNamesRealTests(t *testing.T) {
	data, err := os.ReadFile("../docs/reliability.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(data)
	defined := map[string]bool{}
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)\w+)\(`).FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("`((?:Test|Fuzz)\\w+)`").FindAllStringSubmatch(section, -1)
	if len(names) < 20 {
		t.Fatalf("the section names %d tests", len(names))
	}
	for _, m := range names {
		if !defined[m[1]] {
			t.Errorf("docs/reliability.md names %s, which is no test", m[1])
		}
	}
}

// TestHelpFitsOneHundredColumns: every command's --help, and every help topic, keeps to
// 100 display columns.
func TestHelpFitsOneHundredColumns(t *testing.T) {
	root := NewRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	var paths [][]string
	walk(root, func(c *cobra.Command) {
		paths = append(paths, strings.Fields(c.CommandPath())[1:])
	})
	for _, p := range paths {
		out, _, code := runCLI(t, append(p, "--help")...)
		if len(p) > 0 && p[0] == "help" {
			continue
		}
		if code != 0 {
			t.Errorf("rlsim %s --help: exit %d", strings.Join(p, " "), code)
		}
		for i, line := range strings.Split(out, "\n") {
			if w := report.DisplayWidth(line); w > 100 {
				t.Errorf("rlsim %s --help, line %d: %d columns: %s", strings.Join(p, " "), i+1, w, line)
			}
		}
	}
	out, _, _ := runCLI(t, "help", "columns")
	if !strings.Contains(out, "peak_window_admitted") {
		t.Errorf("rlsim help columns lacks the names:\n%s", out)
	}
}
