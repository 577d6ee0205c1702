package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/rlsim/rlsim/run"
)

// progressDelay is how long a run goes before a bar appears: quick runs stay silent.
const progressDelay = time.Second

// progressInterval is the shortest time between two redraws.
const progressInterval = 100 * time.Millisecond

// progressWidth is the number of cells in the bar.
const progressWidth = 30

// progressBar draws how far a run of several scenarios has come on a terminal and then a
// summary line with the simulated requests per second. It reads the wall clock, which only
// the command line may do: the simulation reports virtual progress and never waits for it.
type progressBar struct {
	w         io.Writer
	now       func() time.Time
	start     time.Time
	lastDraw  time.Time
	drawn     bool
	scenarios int // how many scenarios the run holds
	done      int // how many have finished
}

// newProgressBar returns a bar drawing on w, or nil when w is not a terminal (a file, a
// pipe, a test's buffer): then there is no progress output at all.
func newProgressBar(w io.Writer, scenarios int) *progressBar {
	f, ok := w.(*os.File)
	if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return nil
	}
	return &progressBar{w: w, now: time.Now, start: time.Now(), scenarios: scenarios}
}

// update is the run.Options.Progress callback.
func (b *progressBar) update(p run.Progress) {
	if b == nil {
		return
	}
	t := b.now()
	if t.Sub(b.start) < progressDelay || t.Sub(b.lastDraw) < progressInterval {
		return
	}
	b.lastDraw = t
	within := 0.0
	if p.Horizon > 0 {
		within = min(float64(p.Now)/float64(p.Horizon), 1)
	}
	frac := (float64(b.done) + (float64(p.Index)+within)/float64(max(p.Count, 1))) / float64(max(b.scenarios, 1))
	cells := int(frac * progressWidth)
	fmt.Fprintf(b.w, "\r[%s%s] %3.0f%% %s %s\033[K", strings.Repeat("=", cells), strings.Repeat(" ", progressWidth-cells),
		frac*100, p.Scenario, p.Algorithm)
	b.drawn = true
}

// scenarioDone moves the bar on to the next scenario.
func (b *progressBar) scenarioDone() {
	if b != nil {
		b.done++
	}
}

// finish clears the bar and prints the summary line.
func (b *progressBar) finish(requests int64) {
	if b == nil {
		return
	}
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
	elapsed := b.now().Sub(b.start)
	rate := float64(requests) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(b.w, "rlsim: simulated %d requests in %s (%.0f requests/s)\n", requests, elapsed.Round(time.Millisecond), rate)
}
