package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/external"
	"github.com/rlsim/rlsim/run"
	"github.com/rlsim/rlsim/store"
	"github.com/rlsim/rlsim/worstcase"
)

// ownOptions are the flags that bring the user's own limiters to a run: --lua and
// --limiter-exec, on compare, run, replay and worst-case.
type ownOptions struct {
	lua        []string
	exec       []string
	timeout    time.Duration
	clockCheck bool
}

// addOwnFlags registers --lua and --limiter-exec on c.
func addOwnFlags(c *cobra.Command, o *ownOptions) {
	f := c.Flags()
	f.StringArrayVar(&o.lua, "lua", nil, "judge your own limiter: a Lua script called by rlsim's convention (docs/own-limiters.md), reported under its file's name, on an embedded miniredis or --redis (repeatable)")
	f.StringArrayVar(&o.exec, "limiter-exec", nil, "judge your own limiter: a command (run by /bin/sh -c) answering one JSON line per request, reported under its program's file name (repeatable)")
	f.DurationVar(&o.timeout, "limiter-timeout", external.DefaultTimeout, "how long a --limiter-exec program may take to answer, or to take more input, before the run fails")
	f.BoolVar(&o.clockCheck, "limiter-clock-check", true, "before the run, check that each --limiter-exec program decides by the request's t_ns rather than its own clock")
}

// addOwnRedisFlag registers --redis and --store-timeout on a command whose only store is
// the one --lua scripts run on (replay, worst-case).
func addOwnRedisFlag(c *cobra.Command, url *string, timeout *time.Duration) {
	addRedisFlag(c, url, "run the --lua scripts on this Redis server (redis://host:port/db) instead of an embedded miniredis; their keys go under a prefix of the run's and are deleted afterwards")
	addStoreTimeoutFlag(c, timeout)
}

// args are the flags that bring the same limiters again, for a command line that
// repeats a run.
func (o *ownOptions) args() []string {
	var out []string
	for _, l := range o.lua {
		out = append(out, "--lua", shellQuote(l))
	}
	for _, e := range o.exec {
		out = append(out, "--limiter-exec", shellQuote(e))
	}
	if len(o.exec) > 0 && !o.clockCheck {
		out = append(out, "--limiter-clock-check=false")
	}
	return out
}

// shellQuote quotes s for a shell when it holds more than plain word characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// owned are the limiters the user brought to one command, opened.
type owned struct {
	makers []run.Maker
	lua    []*external.Lua
	exec   []*external.Exec
	stop   func() bool
	// runs is, per program, what it answered inside runs (measured), as opposed to the
	// worst-case search; luaRuns the same per script.
	runs    []external.Rate
	luaRuns []external.Rate
	// restoreGC puts back the garbage collector's target that the embedded scripts
	// raised (external.RaiseGC); nil when none was raised.
	restoreGC func()
}

// open loads the scripts and checks each on its face (a syntax error, an unreachable
// --redis), names the programs, and refuses two limiters of one name or a name of a
// built-in algorithm. When ctx ends by an interrupt (see interruptible), the programs are
// killed at once, so the run stops without waiting for their answers.
func (o *ownOptions) open(ctx context.Context, redisURL string, so store.Options, streams IO) (*owned, error) {
	w := &owned{stop: func() bool { return false }}
	if o.timeout <= 0 {
		return nil, usagef("--limiter-timeout: must be positive, got %s", o.timeout)
	}
	seen := map[string]string{}
	name := func(n, flag, value string) error {
		if algorithms.Known(n) {
			return usagef("%s %s: its name %q is a built-in algorithm's; rename the file", flag, value, n)
		}
		if prev, ok := seen[n]; ok {
			return usagef("%s %s: its name %q is also that of %s; rename one of the files", flag, value, n, prev)
		}
		seen[n] = flag + " " + value
		return nil
	}
	for _, path := range o.lua {
		l, err := external.NewLua(path, redisURL)
		if err != nil {
			return nil, fmt.Errorf("--lua %w", err)
		}
		l.Store = so
		if err := name(l.Name(), "--lua", path); err != nil {
			return nil, err
		}
		if err := l.Check(); err != nil {
			return nil, fmt.Errorf("--lua %s: %w", path, trimPrefix(err, l.Describe()+": "))
		}
		w.lua = append(w.lua, l)
		w.luaRuns = append(w.luaRuns, external.Rate{})
		w.makers = append(w.makers, l)
	}
	for _, command := range o.exec {
		e, err := external.NewExec(command, streams.Err)
		if err != nil {
			return nil, usagef("--limiter-exec %q: an empty command", command)
		}
		if err := name(e.Name(), "--limiter-exec", fmt.Sprintf("%q", command)); err != nil {
			return nil, err
		}
		e.Timeout = o.timeout
		e.SkipClockCheck = !o.clockCheck
		w.exec = append(w.exec, e)
		w.makers = append(w.makers, e)
		w.runs = append(w.runs, external.Rate{})
	}
	if len(w.exec) > 0 && ctx != nil {
		w.stop = context.AfterFunc(ctx, func() {
			if cause, ok := context.Cause(ctx).(interruptedError); ok {
				for _, e := range w.exec {
					e.Interrupt(cause)
				}
			}
		})
	}
	if len(w.lua) > 0 && redisURL == "" {
		w.restoreGC = external.RaiseGC()
	}
	return w, nil
}

// trimPrefix is err's message without prefix, when it starts with it.
func trimPrefix(err error, prefix string) error {
	if msg, ok := strings.CutPrefix(err.Error(), prefix); ok {
		return errors.New(msg)
	}
	return err
}

// close ends every program still running and reports on stderr what the run could not
// show in its tables: the scripts' warnings and each program's decisions per second.
func (w *owned) close(streams IO) {
	if w == nil {
		return
	}
	w.stop()
	for _, e := range w.exec {
		e.Close()
	}
	if w.restoreGC != nil {
		w.restoreGC()
	}
	for _, l := range w.lua {
		for _, msg := range l.Warnings() {
			fmt.Fprintf(streams.Err, "rlsim: warning: --lua %s\n", msg)
		}
	}
	for i, l := range w.lua {
		all, runs := l.Stats(), w.luaRuns[i]
		var parts []string
		if runs.Decisions > 0 && runs.Wall > 0 {
			parts = append(parts, fmt.Sprintf("%d decisions in %.2fs of wall time on %s: %.0f decisions/s",
				runs.Decisions, runs.Wall.Seconds(), l.Server(), runs.PerSecond()))
		}
		if n := all.Decisions - runs.Decisions; n > 0 {
			parts = append(parts, fmt.Sprintf("and %d for the checks and the worst-case search in %.2fs", n, (all.Wall-runs.Wall).Seconds()))
		}
		if len(parts) > 0 {
			fmt.Fprintf(streams.Err, "rlsim: --lua %s: %s\n", l.Script.Path, strings.Join(parts, "; "))
		}
	}
	for i, e := range w.exec {
		all, runs := e.Stats(), w.runs[i]
		var parts []string
		if runs.Decisions > 0 && runs.Wall > 0 {
			parts = append(parts, fmt.Sprintf("%d decisions in %.2fs of wall time, written ahead of the answers: %.0f decisions/s",
				runs.Decisions, runs.Wall.Seconds(), runs.PerSecond()))
		}
		if n := all.Decisions - runs.Decisions; n > 0 {
			parts = append(parts, fmt.Sprintf("and %d for the worst-case search (one process per policy, a fresh key per candidate schedule) in %.2fs", n, (all.Wall-runs.Wall).Seconds()))
		}
		if len(parts) > 0 {
			fmt.Fprintf(streams.Err, "rlsim: --limiter-exec %s: %s\n", e.Name(), strings.Join(parts, "; "))
		}
	}
}

// measure runs fn, a run, and counts what the programs answered in it.
func (w *owned) measure(fn func() error) error {
	if w == nil {
		return fn()
	}
	before := make([]external.Rate, len(w.exec))
	for i, e := range w.exec {
		before[i] = e.Stats()
	}
	luaBefore := make([]external.Rate, len(w.lua))
	for i, l := range w.lua {
		luaBefore[i] = l.Stats()
	}
	err := fn()
	for i, e := range w.exec {
		after := e.Stats()
		w.runs[i].Decisions += after.Decisions - before[i].Decisions
		w.runs[i].Wall += after.Wall - before[i].Wall
	}
	for i, l := range w.lua {
		after := l.Stats()
		w.luaRuns[i].Decisions += after.Decisions - luaBefore[i].Decisions
		w.luaRuns[i].Wall += after.Wall - luaBefore[i].Wall
	}
	return err
}

// cleaned says, for an interrupted run's line, what was stopped; "" with no program.
func (w *owned) cleaned() string {
	if w == nil || len(w.exec) == 0 {
		return ""
	}
	return "the --limiter-exec programs were stopped"
}

// byName is the maker of the limiter called name, or nil.
func (w *owned) byName(name string) run.Maker {
	if w == nil {
		return nil
	}
	for _, m := range w.makers {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

// targets are worst-case targets for each of the user's limiters under pol.
func (w *owned) targets(pol algorithms.Policy, epoch int64) []worstcase.Target {
	var out []worstcase.Target
	for _, m := range w.makers {
		out = append(out, worstcase.Target{Algorithm: m.Name(), Own: m, Policy: pol, Epoch: epoch})
	}
	return out
}
