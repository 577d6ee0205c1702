package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// streamHead is a scenario up to its script's key; the tests append script lines.
const streamHead = "name: s\nduration: 1m\npolicy: {limit: 5, window: 10s}\ntraffic:\n  - script:\n"

// sameReading parses text with its one-mapping-per-line lists read line by line and read
// as part of the tree, and fails t unless both give the same scenario or the same error,
// and every field the tree places is placed at the same line and column. It returns how
// many lists were read line by line.
func sameReading(t *testing.T, text string) int {
	t.Helper()
	streamed, errS := parseWith("s.yaml", text, true)
	tree, errT := parseWith("s.yaml", text, false)
	if fmt.Sprint(errS) != fmt.Sprint(errT) {
		t.Fatalf("read line by line: %v\nread as a tree:    %v\nfile:\n%s", errS, errT, text)
	}
	if errS != nil {
		return -1
	}
	for path, want := range tree.positions.tree {
		got := streamed.positions.at(path)
		if got == nil || got.Line != want.Line || got.Column != want.Column {
			t.Fatalf("%s: placed at %v line by line, at %d:%d in the tree\nfile:\n%s", path, got, want.Line, want.Column, text)
		}
	}
	n := len(streamed.positions.streams)
	streamed.positions, tree.positions = nil, nil
	if !reflect.DeepEqual(streamed, tree) {
		t.Fatalf("read line by line:\n%+v\nread as a tree:\n%+v\nfile:\n%s", streamed, tree, text)
	}
	return n
}

func TestStreamedListsReadAsTheTree(t *testing.T) {
	tests := []struct {
		name, text string
		streams    int // lists read line by line; -1: an error, the same either way
	}{
		{"plain", streamHead + "      - {at: 1s, key: a}\n      - {at: 2s, count: 3, key: b, spread: 500ms, cost: 2, label: attacker}\n", 1},
		{"quoted and clock times", streamHead + "      - {at: \"10:00:01.500\", key: 'user 1'}\n      - {at: 10:00:02, key: \"é\", count: 0}\n", 1},
		{"comments, blank lines, CRLF", strings.ReplaceAll(streamHead+"      # recorded\n      - {at: 1s, key: a}   # first\n\n      - {at: 2s, key: a,}\n# after\n", "\n", "\r\n"), 1},
		{"compact indentation", "name: s\nduration: 1m\npolicy: {limit: 5, window: 10s}\ntraffic:\n- script:\n  - {at: 1s, key: a}\n  - {at: 2s, key: b}\n  poisson: {rate: 1, keys: 2}\n", -1},
		{"two lists, a later key", streamHead + "      - {at: 1s, key: a}\n  - script: # more\n    - {at: 2s, key: b}\nlimits:\n  - {key: user, limit: 3, window: 1s}\n  - {key: ip, limit: 9, window: 1m, name: wide}\n", 3},
		{"numbers go-yaml reads", streamHead + "      - {at: 1s, key: 8812, count: 0x10, cost: 0o7}\n      - {at: 0, key: a, count: 1_000}\n", 1},
		{"a key YAML reads as a number", streamHead + "      - {at: 1s, key: 007}\n", -1},
		{"a null", streamHead + "      - {at: 1s, key: ~}\n", -1},
		{"a boolean key", streamHead + "      - {at: 1s, key: a, label: true}\n", -1},
		{"a float count", streamHead + "      - {at: 1s, key: a, count: 1.5}\n", -1},
		{"an unknown field", streamHead + "      - {at: 1s, key: a}\n      - {at: 1s, key: a, colour: red}\n", -1},
		{"a duplicate key", streamHead + "      - {at: 1s, key: a, at: 2s}\n", -1},
		{"a duplicate key after a syntax error", "name: [\n" + streamHead + "      - {at: 1s, key: a, at: 2s}\n", -1},
		{"a syntax error after a duplicate key", streamHead + "      - {at: 1s, key: a, at: 2s}\nname: [\n", -1},
		{"a line the stream does not take", streamHead + "      - {at: 1s, key: a}\n      - {at: 2s, key: [a]}\n      - {at: 3s, key: a}\n", -1},
		{"a block entry among flow lines", streamHead + "      - {at: 1s, key: a}\n      - at: 2s\n        key: b\n", 0},
		{"a list in a block scalar", "name: s\ndescription: |\n  notes:\n  - {at: 1s}\nduration: 1m\npolicy: {limit: 5, window: 10s}\ntraffic:\n  - script:\n      - {at: 1s, key: a}\n", 1},
		{"an invalid time, late", streamHead + "      - {at: 1s, key: a}\n      - {at: 2 s, key: a}\n", -1},
		{"validation places a missing field", streamHead + "      - {at: 1s, key: a}\n      - {key: a}\n", -1},
		{"validation places a value", streamHead + "      - {at: 1s, key: a, count: -1}\n", -1},
		{"an empty mapping", streamHead + "      - {}\n", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameReading(t, tt.text); got != tt.streams {
				t.Errorf("%d lists read line by line, want %d", got, tt.streams)
			}
		})
	}
}

// The built-in scenarios and the files of bad scenarios read the same either way.
func TestStreamedFilesReadAsTheTree(t *testing.T) {
	streamed := 0
	for _, n := range Builtins() {
		sc, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		if sameReading(t, sc.Text) > 0 {
			streamed++
		}
	}
	bad, _ := filepath.Glob("testdata/bad*/*.yaml")
	for _, p := range bad {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sameReading(t, string(data))
	}
	if streamed < 3 {
		t.Errorf("%d built-in scenarios read a list line by line, want their scripts to", streamed)
	}
}

// FuzzStreamEqualsTree holds the line-by-line reading of lists to the tree's: whatever
// the file, the same scenario or the same error, and every field at the same place.
func FuzzStreamEqualsTree(f *testing.F) {
	f.Add([]byte(streamHead + "      - {at: 1s, key: a}\n      - {at: \"10:00:59.900\", count: 100, key: user_8812, spread: 0s}\n"))
	f.Add([]byte(streamHead + "      - {at: 1s, key: 'a b', cost: 2, label: attacker} # c\n\n      - {at: 2s, key: a, at: 3s}\n"))
	f.Add([]byte("name: s\nduration: 1m\npolicy: {limit: 5, window: 10s}\ntraffic:\n- script:\n  - {at: 1s, key: 007}\n  - {at: .5, key: -1, count: +1}\n"))
	f.Add([]byte(streamHead + "      - {at: 1s, key: a, count: 0b11, cost: 1e3}\n      - {at: 2s, key: ~, label: null}\nlimits:\n  - {key: user, limit: 2, window: 1s}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		sameReading(t, string(data))
	})
}

func TestLimitsOfAFile(t *testing.T) {
	nested := func(open string, n int) string { return "name: s\ntraffic: " + strings.Repeat(open, n) + "\n" }
	// A script written in block style is read as a tree; the line on which its text
	// passes the bound is named.
	var block strings.Builder
	block.WriteString(streamHead)
	overLine := 0
	for i := 0; block.Len() <= MaxTreeBytes; i++ {
		fmt.Fprintf(&block, "      - at: %dms\n", i)
		if block.Len() > MaxTreeBytes {
			overLine = strings.Count(block.String(), "\n")
		}
		block.WriteString("        key: u\n")
	}
	if overLine == 0 {
		overLine = strings.Count(block.String(), "\n")
	}
	tests := []struct{ name, text, want string }{
		{"flow nesting", nested("[", 100_000), "s.yaml:2:41: nested more than 32 levels deep"},
		{"mapping nesting", nested("{a: ", 100_000), "s.yaml:2:134: nested more than 32 levels deep"},
		{"block nesting", "traffic:\n" + strings.Repeat("- ", 100_000), "s.yaml:2:63: nested more than 32 levels deep"},
		{"flow nesting at the limit", nested("[", 31) + strings.Repeat("]", 31), "s.yaml:2:11: traffic[0]: want a mapping, got a list"},
		{"a tree too large", block.String(), fmt.Sprintf("s.yaml:%d:1: more than 1 MiB of this file is read as a YAML tree", overLine)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tt.text))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant %s…", err, tt.want)
			}
		})
	}
}

func TestTooManyEntries(t *testing.T) {
	var b strings.Builder
	b.WriteString(streamHead)
	for range MaxEntries {
		b.WriteString("      - {}\n")
	}
	b.WriteString("      - {}\n  - script:\n      - {at: 1s, key: a}\n")
	_, err := Parse("s.yaml", []byte(b.String()))
	// traffic[0] is the first entry, so the script's last line but one (on line 5 +
	// MaxEntries) is the one too many.
	want := fmt.Sprintf("s.yaml:%d:9: traffic[0].script: more than 2000000 list entries in one file", MaxEntries+5)
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
}

// In a file too large to read whole as a tree, a key written twice in a streamed line
// is the parser's error, and is reported in the order of the file.
func TestDuplicateKeyInALongScript(t *testing.T) {
	long := string(scriptFile(30_000))
	tests := []struct{ name, text, want string }{
		{"alone", long + "      - {at: 1s, key: a, at: 2s}\n",
			"trace.yaml:30006:26: YAML syntax error: mapping key \"at\" already defined at [30006:10]"},
		{"before a syntax error", long + "      - {at: 1s, key: a, key: b}\nname: [\n",
			"trace.yaml:30006:26: YAML syntax error: mapping key \"key\" already defined at [30006:18]"},
		{"after a syntax error", "description: [\n" + long + "      - {at: 1s, key: a, at: 2s}\n",
			"trace.yaml:1:14: YAML syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("trace.yaml", []byte(tt.text))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant %s…", err, tt.want)
			}
		})
	}
	// The message is the parser's own for the same line in a short file.
	_, err := Parse("trace.yaml", []byte(streamHead+"      - {at: 1s, key: a, at: 2s}\n"))
	if want := "trace.yaml:6:26: YAML syntax error: mapping key \"at\" already defined at [6:10]"; err == nil || err.Error() != want {
		t.Fatalf("short file: %v\nwant %s", err, want)
	}
}

func TestFileTooLarge(t *testing.T) {
	line := "# " + strings.Repeat("x", 1021) + "\n"
	text := streamHead + "      - {at: 1s, key: a}\n" + strings.Repeat(line, MaxFileBytes/len(line)+1)
	_, err := Parse("s.yaml", []byte(text))
	if err == nil || !strings.HasPrefix(err.Error(), "s.yaml:") || !strings.Contains(err.Error(), "a scenario file holds at most 128 MiB") {
		t.Fatalf("error %v", err)
	}
	var pe *PositionError
	if !asPositionError(err, &pe) || pe.Line < 100_000 {
		t.Fatalf("error %v is not placed where the file passes the limit", err)
	}
}

// Load reads no more of a file than the bound and one byte: an endless one is refused,
// not read to the end of memory.
func TestLoadStopsAtTheBound(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := Load("/dev/zero")
	if want := fmt.Sprintf("/dev/zero:1:%d: a scenario file holds at most 128 MiB", MaxFileBytes+1); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want %s…", err, want)
	}
}

// A long script holds each line's values, in order.
func TestLongScriptKeepsEveryLine(t *testing.T) {
	sc, err := Parse("trace.yaml", scriptFile(200_000))
	if err != nil {
		t.Fatal(err)
	}
	script := *sc.Traffic[0].Spec.(*ScriptSpec)
	if len(script) != 200_000 {
		t.Fatalf("%d lines", len(script))
	}
	for _, i := range []int{0, 1, 96, 97, 123_456, 199_999} {
		l := script[i]
		if l.At.D.Milliseconds() != int64(i) || l.Key != fmt.Sprintf("user_%d", i%97) || *l.Count != 1 || *l.Cost != 1 {
			t.Errorf("line %d: %+v", i, l)
		}
	}
	if !slices.IsSortedFunc(script, func(a, b ScriptLine) int { return int(a.At.D - b.At.D) }) {
		t.Error("lines out of order")
	}
}

// scriptFile is a scenario whose script has n lines, one flow mapping each, as a
// recorded trace is written: a request every millisecond over 97 users.
func scriptFile(n int) []byte {
	var b strings.Builder
	b.WriteString("name: trace\npolicy: {limit: 100, window: 1m}\nkey: user\ntraffic:\n  - script:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - {at: %dms, count: 1, key: user_%d, cost: 1}\n", i, i%97)
	}
	return []byte(b.String())
}

// BenchmarkParseScript parses scripts of ten thousand and a million lines; ns/op over
// the lines is the cost of one line, which should not grow with the script.
func BenchmarkParseScript(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		data := scriptFile(n)
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse("trace.yaml", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
