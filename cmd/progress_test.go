package cmd

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/rlsim/rlsim/run"
)

// The bar waits a second, then covers the simulation of every scenario and the drawing of
// their files, and ends with the summary line.
func TestProgressCoversSimulationAndDrawing(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	p := &progress{w: &out, now: func() time.Time { return clock }, start: clock, scenarios: 2, rendering: true}
	sim := run.Progress{Scenario: "steady-poisson", Algorithm: "gcra", Index: 1, Count: 2, Now: time.Minute, Horizon: 2 * time.Minute}
	clock = clock.Add(500 * time.Millisecond)
	p.simulating(sim)
	if out.Len() != 0 {
		t.Fatalf("drew before a second had passed: %q", out.String())
	}
	clock = clock.Add(time.Second)
	p.simulating(sim)
	// First scenario of two, second algorithm of two, half way: 3/4 of the first
	// scenario's simulation, which is a quarter of the run.
	if got := out.String(); !strings.Contains(got, "simulating steady-poisson gcra") || !strings.Contains(got, " 18%") {
		t.Fatalf("bar = %q", got)
	}
	p.scenarioDone("steady-poisson")
	p.scenarioDone("boundary-burst")
	out.Reset()
	// Second scenario's files, the third of four: past the simulation (half the run), the
	// first scenario's files (a quarter) and half the second's.
	p.drawing(1, 2, 4, "b/window-timeline.svg")
	if got := out.String(); !strings.Contains(got, "drawing b/window-timeline.svg") || !strings.Contains(got, " 87%") {
		t.Fatalf("bar = %q", got)
	}
	out.Reset()
	clock = clock.Add(500 * time.Millisecond)
	p.finish(4_000_000)
	if got := out.String(); !strings.HasSuffix(got, "\r\033[Krlsim: simulated 4000000 requests in 2s (2000000 requests/s)\n") {
		t.Fatalf("finish = %q", got)
	}
}

func TestNoProgressOffATerminal(t *testing.T) {
	if newProgress(&bytes.Buffer{}, &bytes.Buffer{}, "table", 1, true) != nil {
		t.Fatal("a buffer got a progress bar")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newProgress(f, f, "table", 1, true) != nil {
		t.Fatal("a regular file got a progress bar")
	}
	var none *progress
	none.simulating(run.Progress{})
	none.scenarioDone("x")
	none.drawing(0, 0, 1, "x")
	none.finish(1)
	_, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q: want nothing on a stderr that is not a terminal", code, errOut)
	}
}

// On a real terminal the bar is drawn, unless the run prints JSON or CSV for a pipe to
// read: then the terminal gets nothing at all.
func TestProgressOnATerminalOnly(t *testing.T) {
	tty, err := openTerminal(t)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	defer pipeW.Close()
	for _, c := range []struct {
		out    io.Writer
		format string
		want   bool
	}{
		{tty.slave, "table", true}, {pipeW, "table", true}, {pipeW, "markdown", true},
		{tty.slave, "json", true}, {pipeW, "json", false}, {pipeW, "csv", false},
	} {
		if got := newProgress(tty.slave, c.out, c.format, 1, true) != nil; got != c.want {
			t.Errorf("stdout a terminal %v, --format %s: progress %v, want %v", c.out == tty.slave, c.format, got, c.want)
		}
	}

	defer func(d, i time.Duration) { progressDelay, progressInterval = d, i }(progressDelay, progressInterval)
	progressDelay, progressInterval = 0, 0 // draw every step, however quick the run
	run := func(out *os.File, args ...string) string {
		t.Helper()
		go func() { _, _ = io.Copy(io.Discard, pipeR) }()
		if code := Main(args, IO{In: strings.NewReader(""), Out: out, Err: tty.slave}); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		return tty.drain(t)
	}
	dir := t.TempDir()
	drawn := run(pipeW, "compare", "--scenario", "boundary-burst", "--out", dir, "--charts", "svg")
	for _, want := range []string{"simulated boundary-burst", "drawing boundary-burst/window-timeline.svg", "drawing boundary-burst/summary.md", "rlsim: simulated 1200 requests in",
		"rlsim: wrote 10 files (", "open " + filepath.Join(dir, "index.html")} {
		if !strings.Contains(drawn, want) {
			t.Errorf("the terminal shows %q, lacking %q", drawn, want)
		}
	}
	if got := run(pipeW, "compare", "--scenario", "boundary-burst", "--out", dir, "--format", "json"); got != "" {
		t.Errorf("JSON for a pipe, yet the terminal shows %q", got)
	}
}

// terminal is a pseudo-terminal: the program writes to slave, the test reads master.
type terminal struct {
	master, slave *os.File
	lines         *bufio.Reader
}

func openTerminal(t *testing.T) (*terminal, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		slave.Close()
		master.Close()
	})
	return &terminal{master: master, slave: slave, lines: bufio.NewReader(master)}, nil
}

// drain returns what was written to the terminal so far: it writes a marker line and reads
// up to it.
func (tt *terminal) drain(t *testing.T) string {
	t.Helper()
	const marker = "--end of output--"
	if _, err := io.WriteString(tt.slave, marker+"\n"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		line, err := tt.lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.Index(line, marker); i >= 0 {
			b.WriteString(line[:i])
			return b.String()
		}
		b.WriteString(line)
	}
}

// A replay's line waits a second, then says how much of the log is read, at how many lines
// a second, and how long the rest will take at that pace; a pipe, whose size is not known,
// gets no percentage and no time left; the summary ends it.
func TestReplayProgressShowsBytesLinesAndTimeLeft(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	read := int64(0)
	p := &replayProgress{w: &out, now: func() time.Time { return clock }, start: clock, throttle: progressInterval, name: "access", total: 200 << 20}
	s := run.Progress{Requests: 500_000, Bytes: func() int64 { return read }}
	clock = clock.Add(500 * time.Millisecond)
	p.update(s)
	if out.Len() != 0 {
		t.Fatalf("drew before a second had passed: %q", out.String())
	}
	clock = clock.Add(1500 * time.Millisecond)
	read = 50 << 20
	p.update(s)
	// A quarter read in 2 s: 6 s left, at 250k lines a second.
	if got := out.String(); got != "\r\033[Kreplaying access: 50.0 of 200.0 MiB (25%), 250.0k lines/s, ETA 6s" {
		t.Fatalf("line = %q", got)
	}
	out.Reset()
	p.update(s) // within the throttle: nothing
	if out.Len() != 0 {
		t.Fatalf("drew again at once: %q", out.String())
	}
	pipe := &replayProgress{w: &out, now: func() time.Time { return clock }, start: clock.Add(-4 * time.Second), name: "stdin"}
	pipe.update(run.Progress{Requests: 2_000_000, Bytes: func() int64 { return 300 << 20 }})
	if got := out.String(); got != "\r\033[Kreplaying stdin: 300.0 MiB read, 500.0k lines/s" {
		t.Fatalf("pipe line = %q", got)
	}
	out.Reset()
	clock = clock.Add(2 * time.Second)
	p.finish(2_000_000)
	if got := out.String(); got != "\r\033[Krlsim: replayed 2000000 lines in 4s (500.0k lines/s)\n" {
		t.Fatalf("finish = %q", got)
	}
	if newReplayProgress(&bytes.Buffer{}, &bytes.Buffer{}, "table", "x", 1) != nil {
		t.Error("a progress line for a buffer, not a terminal")
	}
}
