package cmd

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/rlsim/rlsim/run"
)

// progressDelay is how long a run goes before a bar appears: quick runs stay silent.
var progressDelay = time.Second

// progressInterval is the shortest time between two redraws.
var progressInterval = 100 * time.Millisecond

// progressWidth is the number of cells in the bar.
const progressWidth = 30

// Each scenario counts progressUnits for its simulation and, when the run writes a
// results folder, as many for drawing and writing its files, so the bar covers the whole
// run and not only the simulation.
const progressUnits = 1000

// progress draws how far a whole run has come on a terminal — each scenario's simulation,
// in virtual time, then the drawing of its charts and files — and ends with a summary line
// of the simulated requests per second. It reads the wall clock, which only the command
// line may do: the simulation reports virtual progress and never waits for the bar.
type progress struct {
	w     io.Writer
	now   func() time.Time
	start time.Time
	// throttle is the shortest time between two redraws (tests draw every step).
	throttle time.Duration
	// scenarios is how many scenarios the run holds, simulated how many have finished.
	scenarios, simulated int
	// rendering says whether the run writes files, whose drawing the bar covers too.
	rendering bool
	bar       *progressbar.ProgressBar // nil until the run has gone on for progressDelay
	done      int64                    // units done
	label     string
	// silent says the store has sent nothing for a while (storeWatch), "" while it
	// answers; mu guards the fields, as the watch reports from its own goroutine.
	silent string
	mu     sync.Mutex
}

// newProgress returns the progress of a run of scenarios that prints format on out and
// draws on errw, or nil — no progress output at all — when errw is not a terminal (a file,
// a pipe, a test's buffer), or when machine output (JSON, CSV) goes to something other
// than a terminal, where a script is reading. rendering says whether the run writes a
// results folder.
func newProgress(errw, out io.Writer, format string, scenarios int, rendering bool) *progress {
	if !isTerminal(errw) || (format == "json" || format == "csv") && !isTerminal(out) {
		return nil
	}
	return &progress{w: errw, now: time.Now, start: time.Now(), throttle: progressInterval, scenarios: scenarios, rendering: rendering}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// total is the run's units.
func (p *progress) total() int64 {
	per := int64(progressUnits)
	if p.rendering {
		per += progressUnits
	}
	return int64(max(p.scenarios, 1)) * per
}

// simulating is the run.Options.Progress callback.
func (p *progress) simulating(s run.Progress) {
	if p == nil {
		return
	}
	within := 0.0
	if s.Horizon > 0 {
		within = min(float64(s.Now)/float64(s.Horizon), 1)
	}
	frac := (float64(s.Index) + within) / float64(max(s.Count, 1))
	p.set(int64(p.simulated)*progressUnits+int64(frac*progressUnits), fmt.Sprintf("simulating %s %s", s.Scenario, s.Algorithm))
}

// scenarioDone moves the bar on past the simulation of the scenario named.
func (p *progress) scenarioDone(name string) {
	if p == nil {
		return
	}
	p.simulated++
	p.set(int64(p.simulated)*progressUnits, "simulated "+name)
}

// drawing reports that file (name, the file-th of files) of the index-th scenario is being
// drawn or written.
func (p *progress) drawing(index, file, files int, name string) {
	if p == nil || !p.rendering {
		return
	}
	base := int64(p.scenarios) * progressUnits
	p.set(base+int64(index)*progressUnits+int64(file)*progressUnits/int64(max(files, 1)), "drawing "+name)
}

// storeSilent shows on the bar that the store has sent nothing for a while (msg), or
// that it answers again (""), and redraws it, so a run waiting on a slow store goes on
// showing how long it has waited.
func (p *progress) storeSilent(msg string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent = msg
	p.setLocked(p.done, p.label)
}

// set moves the bar to done units with label, drawing it once the run has gone on for
// progressDelay.
func (p *progress) set(done int64, label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(done, label)
}

func (p *progress) setLocked(done int64, label string) {
	p.done, p.label = max(p.done, min(done, p.total()-1)), label
	if p.bar == nil {
		if p.now().Sub(p.start) < progressDelay {
			return
		}
		p.bar = progressbar.NewOptions64(p.total(),
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetWidth(progressWidth),
			progressbar.OptionThrottle(p.throttle),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionUseANSICodes(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetTheme(progressbar.Theme{Saucer: "=", SaucerPadding: " ", BarStart: "[", BarEnd: "]"}),
		)
	}
	if p.silent != "" {
		p.bar.Describe(p.label + " — " + p.silent)
	} else {
		p.bar.Describe(p.label)
	}
	// The bar writes to a terminal; a failed write there is nothing the run can act on.
	_ = p.bar.Set64(p.done)
}

// finish clears the bar and prints the summary line.
func (p *progress) finish(requests int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
		fmt.Fprint(p.w, "\r\033[K")
	}
	elapsed := p.now().Sub(p.start)
	rate := float64(requests) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(p.w, "rlsim: simulated %d requests in %s (%.0f requests/s)\n", requests, elapsed.Round(time.Millisecond), rate)
}

// replayProgress draws how far a replay has read its log, on one line of a terminal:
// bytes read (of how many, when the log is a file), lines decided per second and, for a
// file, the time left at that pace. It reads the wall clock, which only the command line
// may do; the replay reports what it has read and never waits for the line.
type replayProgress struct {
	w        io.Writer
	now      func() time.Time
	start    time.Time
	last     time.Time
	throttle time.Duration
	name     string
	total    int64 // bytes of the log, 0 for a pipe
	drawn    bool
}

// newReplayProgress returns the progress of a replay of the log name (total bytes, 0 when
// not known) that prints format on out and draws on errw, or nil where newProgress gives
// nil.
func newReplayProgress(errw, out io.Writer, format, name string, total int64) *replayProgress {
	if !isTerminal(errw) || (format == "json" || format == "csv") && !isTerminal(out) {
		return nil
	}
	now := time.Now()
	return &replayProgress{w: errw, now: time.Now, start: now, throttle: progressInterval, name: name, total: total}
}

// update is the run.Options.Progress callback.
func (p *replayProgress) update(s run.Progress) {
	if p == nil || s.Bytes == nil {
		return
	}
	now := p.now()
	elapsed := now.Sub(p.start)
	if elapsed < progressDelay || now.Sub(p.last) < p.throttle {
		return
	}
	p.last, p.drawn = now, true
	fmt.Fprint(p.w, "\r\033[K"+p.line(s.Bytes(), s.Requests, elapsed))
}

// line is what update draws after elapsed, with read bytes read and lines decided.
func (p *replayProgress) line(read, lines int64, elapsed time.Duration) string {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	rate := float64(lines) / max(elapsed.Seconds(), 1e-9)
	if p.total <= 0 {
		return fmt.Sprintf("replaying %s: %.1f MiB read, %s lines/s", p.name, mib(read), humanCount(rate))
	}
	s := fmt.Sprintf("replaying %s: %.1f of %.1f MiB (%.0f%%), %s lines/s", p.name, mib(read), mib(p.total),
		100*float64(read)/float64(p.total), humanCount(rate))
	if read > 0 && read < p.total {
		left := time.Duration(float64(elapsed) * float64(p.total-read) / float64(read))
		s += ", ETA " + left.Round(time.Second).String()
	}
	return s
}

// humanCount writes a rate as 950, 12.3k or 1.25M.
func humanCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// finish clears the line and prints the summary.
func (p *replayProgress) finish(lines int64) {
	if p == nil {
		return
	}
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	elapsed := p.now().Sub(p.start)
	fmt.Fprintf(p.w, "rlsim: replayed %d lines in %s (%s lines/s)\n", lines, elapsed.Round(time.Millisecond), humanCount(float64(lines)/max(elapsed.Seconds(), 1e-9)))
}
