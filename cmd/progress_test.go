package cmd

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/run"
)

func TestProgressBarWaitsASecondThenDrawsAndSummarizes(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	b := &progressBar{w: &out, now: func() time.Time { return clock }, start: clock, scenarios: 2}
	p := run.Progress{Scenario: "steady-poisson", Algorithm: "gcra", Index: 1, Count: 2, Now: time.Minute, Horizon: 2 * time.Minute}
	clock = clock.Add(500 * time.Millisecond)
	b.update(p)
	if out.Len() != 0 {
		t.Fatalf("drew before a second had passed: %q", out.String())
	}
	clock = clock.Add(time.Second)
	b.update(p)
	// First scenario of two, second algorithm of two, half way: 3/8 of the run.
	if got := out.String(); !strings.HasPrefix(got, "\r[===========                   ]  38% steady-poisson gcra") {
		t.Fatalf("bar = %q", got)
	}
	out.Reset()
	clock = clock.Add(10 * time.Millisecond)
	b.update(p)
	if out.Len() != 0 {
		t.Fatalf("redrew within %s: %q", progressInterval, out.String())
	}
	b.scenarioDone()
	clock = clock.Add(500 * time.Millisecond)
	b.finish(4_000_000)
	if got := out.String(); got != "\r\033[Krlsim: simulated 4000000 requests in 2.01s (1990050 requests/s)\n" {
		t.Fatalf("finish = %q", got)
	}
}

func TestNoProgressOffATerminal(t *testing.T) {
	if newProgressBar(&bytes.Buffer{}, 1) != nil {
		t.Fatal("a buffer got a progress bar")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newProgressBar(f, 1) != nil {
		t.Fatal("a regular file got a progress bar")
	}
	var nilBar *progressBar
	nilBar.update(run.Progress{})
	nilBar.scenarioDone()
	nilBar.finish(1)
	_, errOut, code := rlsim(t, "compare", "--scenario", "boundary-burst")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q: want nothing on a stderr that is not a terminal", code, errOut)
	}
}
