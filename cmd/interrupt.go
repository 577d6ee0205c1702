package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// interruptible returns ctx, cancelled by the first SIGINT or SIGTERM with an
// interruptedError naming the signal as its cause, and a function that stops listening.
// Every long loop of a run checks the context, stops, and the run cleans up what it
// wrote. From the first signal on the signals' default action is back, so a second one
// ends the process at once, cleaning nothing up (no file a run stages survives that
// either; see outputSet).
func interruptible(ctx context.Context) (context.Context, func()) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(interruptedError{sig: s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interruptedError is a run a signal stopped: its one line says what the run cleaned up.
// It exits 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
type interruptedError struct {
	sig syscall.Signal
	// cleaned says what was cleaned up; empty: nothing needed it.
	cleaned []string
}

func (e interruptedError) Error() string {
	msg := "interrupted by " + signalName(e.sig)
	if len(e.cleaned) == 0 {
		return msg + "; nothing to clean up, nothing written"
	}
	return msg + "; " + strings.Join(e.cleaned, "; ")
}

func (e interruptedError) ExitCode() int { return 128 + int(e.sig) }

// signalName is the signal's usual name: SIGINT, SIGTERM.
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return fmt.Sprintf("signal %d (%s)", int(s), s)
}

// interruption is the error to return for a run that stopped with err: when ctx was
// cancelled by a signal, an interruptedError saying what was cleaned up; otherwise err.
func interruption(ctx context.Context, err error, cleaned ...string) error {
	ie, ok := context.Cause(ctx).(interruptedError)
	if !ok {
		return err
	}
	for _, c := range cleaned {
		if c != "" {
			ie.cleaned = append(ie.cleaned, c)
		}
	}
	return ie
}

// notWritten says which files an interrupted run left unwritten (their old versions, if
// any, as they were).
func notWritten(paths []string) string {
	switch len(paths) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("%s not written", paths[0])
	}
	return fmt.Sprintf("%d files not written (%s, ...)", len(paths), paths[0])
}
