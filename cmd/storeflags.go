package cmd

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/store"
)

// redisValue is --redis: a Redis URL checked while the command line is parsed, so an
// empty one (” used to mean "no server" and quietly ran the embedded store), another
// scheme or a port that is no port is a bad command line (exit 2), not a run that failed.
type redisValue struct{ dst *string }

func (v redisValue) String() string { return *v.dst }
func (v redisValue) Type() string   { return "url" }

func (v redisValue) Set(s string) error {
	if _, err := store.ParseURL(s); err != nil {
		var bad *store.URLError
		if errors.As(err, &bad) {
			return errors.New(bad.Reason) // the flag's error quotes the value (redacted)
		}
		return err
	}
	*v.dst = s
	return nil
}

// addRedisFlag registers --redis on c with usage.
func addRedisFlag(c *cobra.Command, dst *string, usage string) {
	c.Flags().Var(redisValue{dst}, "redis", usage)
}

// maxStoreTimeout is the longest --store-timeout: past an hour of silence a server is not
// slow, and the keys of a run outlive WallMargin no longer.
const maxStoreTimeout = time.Hour

// storeTimeoutValue is --store-timeout, checked while the command line is parsed.
type storeTimeoutValue struct{ dst *time.Duration }

func (v storeTimeoutValue) String() string { return v.dst.String() }
func (v storeTimeoutValue) Type() string   { return "duration" }

func (v storeTimeoutValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 2s or 1m")
	}
	if d <= 0 || d > maxStoreTimeout {
		return fmt.Errorf("must be above 0 and at most %s, got %s", maxStoreTimeout, d)
	}
	*v.dst = d
	return nil
}

// addStoreTimeoutFlag registers --store-timeout on c, a command that talks to a store.
func addStoreTimeoutFlag(c *cobra.Command, dst *time.Duration) {
	*dst = store.DefaultTimeout
	c.Flags().Var(storeTimeoutValue{dst}, "store-timeout", "wall time one round trip to the store (a Redis server, the embedded miniredis) may go without a reply before the run fails; a busy but alive server may need more. Script calls are never sent twice (not the scenario's store_timeout, which is virtual time)")
}

// silentAfter is how long the store may send nothing, calls on their way, before a run
// says it is waiting; the lines off a terminal then come at each doubling of the wait.
const silentAfter = time.Second

// storeWatch reports a store that has gone silent while calls are on their way — slow,
// not (yet) dead: how long it has sent nothing, against the --store-timeout it is given.
// On a terminal the progress bar's label says it and keeps being redrawn; elsewhere a
// line on stderr at 1 s, 2 s, 4 s, … of silence, and one when the store answers again.
// It reads the wall clock, which only the command line may.
type storeWatch struct {
	watch   *store.Watch
	timeout time.Duration
	w       io.Writer
	bar     *progress
	now     func() time.Time
	tick    time.Duration

	since    time.Time // when the store last answered, or calls set off after an idle spell
	ended    int64     // round trips ended at since
	next     time.Duration
	reported time.Duration // the longest silence reported, 0: none
	stop     chan struct{}
	done     sync.WaitGroup
}

// watchStore starts following the faces of a run that share the returned Options (timeout
// d) and reports a silent store on w, or on bar when there is one. stop ends it.
func watchStore(d time.Duration, w io.Writer, bar *progress) (store.Options, func()) {
	s := &storeWatch{watch: &store.Watch{}, timeout: d, w: w, bar: bar, now: time.Now, tick: 250 * time.Millisecond, stop: make(chan struct{})}
	s.since = s.now()
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(s.tick)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.check()
			}
		}
	}()
	var once sync.Once
	return store.Options{Timeout: d, Watch: s.watch}, func() {
		once.Do(func() {
			close(s.stop)
			s.done.Wait()
			s.bar.storeSilent("")
		})
	}
}

// check looks at the watch once.
func (s *storeWatch) check() {
	now := s.now()
	inFlight, ended := s.watch.State()
	if inFlight == 0 || ended != s.ended {
		if s.reported > 0 && ended != s.ended {
			s.say(fmt.Sprintf("rlsim: store: %s answered again after %s without a reply", s.server(), s.silence(now)))
			s.bar.storeSilent("")
		}
		s.since, s.ended, s.next, s.reported = now, ended, silentAfter, 0
		return
	}
	silent := now.Sub(s.since)
	if silent < silentAfter {
		return
	}
	s.reported = silent
	msg := fmt.Sprintf("store silent for %s (slow, not dead: up to --store-timeout %s)", silent.Round(time.Second), s.timeout)
	if s.bar != nil {
		s.bar.storeSilent(msg)
		return
	}
	if silent >= s.next {
		trips := "a round trip on its way"
		if inFlight > 1 {
			trips = fmt.Sprintf("%d round trips on their way", inFlight)
		}
		s.say(fmt.Sprintf("rlsim: store: %s has sent no reply for %s with %s; waiting up to --store-timeout %s",
			s.server(), silent.Round(100*time.Millisecond), trips, s.timeout))
		for s.next <= silent {
			s.next *= 2
		}
	}
}

func (s *storeWatch) silence(now time.Time) time.Duration {
	return now.Sub(s.since).Round(100 * time.Millisecond)
}

func (s *storeWatch) server() string {
	if a := s.watch.Addr(); a != "" {
		return a
	}
	return "the store"
}

func (s *storeWatch) say(line string) {
	if s.bar == nil {
		fmt.Fprintln(s.w, line)
	}
}
