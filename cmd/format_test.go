package cmd

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/render/chart"
)

// testOutput is an output whose figures count how often they are built, and fail with
// fail when it is set.
func testOutput(built *int, fail error) output {
	return output{
		JSON:  map[string]int{"n": 1},
		Human: func(w io.Writer, _ bool) error { _, err := io.WriteString(w, "table\n"); return err },
		Figures: func() ([]*chart.Figure, error) {
			*built++
			if fail != nil {
				return nil, fail
			}
			line := chart.LinePanel{XLabel: "x", YLabel: "y", Series: []chart.Series{{Name: "a", Points: []chart.Point{{X: 0, Y: 0}, {X: 1, Y: 1}}}}}
			return []*chart.Figure{
				{Name: "one", Meta: chart.Meta{Title: "one"}, Panels: []chart.Panel{line}},
				{Name: "two", Meta: chart.Meta{Title: "two"}, Panels: []chart.Panel{line}},
			}, nil
		},
		FigureDir: "cmd-x",
	}
}

// writeResults builds the figures only when --out and --charts both ask for them, draws
// each in every format under FigureDir with the folder's manifest, and writes stdout in
// --format whatever it draws.
func TestWriteResultsDrawsFiguresOnlyWhenAsked(t *testing.T) {
	for _, tt := range []struct {
		name   string
		out    bool
		charts []string
		files  []string
	}{
		{"no --out", false, []string{"svg"}, nil},
		{"--charts none", true, nil, nil},
		{"svg and png", true, []string{"svg", "png"}, []string{manifestName, "cmd-x/one.png", "cmd-x/one.svg", "cmd-x/two.png", "cmd-x/two.svg"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			dest := destination{format: "json", charts: tt.charts}
			if tt.out {
				dest.out = dir
			}
			built := 0
			var stdout bytes.Buffer
			var outs outputSet
			if err := writeResults(&outs, &stdout, dest, testOutput(&built, nil)); err != nil {
				t.Fatal(err)
			}
			if want := "{\n  \"n\": 1\n}\n"; stdout.String() != want {
				t.Errorf("stdout %q, want %q", stdout.String(), want)
			}
			if want := min(len(tt.files), 1); built != want {
				t.Errorf("figures built %d times, want %d", built, want)
			}
			files := readTree(t, dir)
			var names []string
			for name, data := range files {
				names = append(names, name)
				if name != manifestName && len(data) == 0 {
					t.Errorf("%s is empty", name)
				}
			}
			if len(names) != len(tt.files) {
				t.Fatalf("files %v, want %v", names, tt.files)
			}
			for _, name := range tt.files {
				if _, ok := files[name]; !ok {
					t.Errorf("no %s among %v", name, names)
				}
			}
			if tt.files != nil {
				if got, want := string(files[manifestName]), strings.Join(tt.files[1:], "\n")+"\n"; got != want {
					t.Errorf("manifest %q, want %q", got, want)
				}
				if !bytes.HasPrefix(files["cmd-x/one.png"], []byte("\x89PNG")) || !bytes.Contains(files["cmd-x/one.svg"], []byte("<svg")) {
					t.Error("a file does not hold its format")
				}
			}
		})
	}
}

// A figure that cannot be built writes nothing: not stdout, not the command's own file
// staged before, not a chart, and the old files of the folder stay as they were.
func TestWriteResultsFailedFigureWritesNothing(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "cmd-x", "one.svg")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "series.csv")
	var outs outputSet
	defer outs.discard()
	if err := outs.add(own, []byte("a,b\n")); err != nil {
		t.Fatal(err)
	}
	built := 0
	var stdout bytes.Buffer
	broken := errors.New("no figure")
	err := writeResults(&outs, &stdout, destination{format: "table", out: dir, charts: []string{"svg"}}, testOutput(&built, broken))
	if !errors.Is(err, broken) {
		t.Fatalf("error %v, want %v", err, broken)
	}
	outs.discard()
	if stdout.Len() != 0 {
		t.Errorf("stdout written: %q", stdout.String())
	}
	files := readTree(t, dir)
	if len(files) != 1 || string(files["cmd-x/one.svg"]) != "old" {
		t.Errorf("the folder holds %d files after the failure; want only the old chart, as it was", len(files))
	}
}
