package run

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
)

// ReplaySpec is a recorded log and how to replay it.
type ReplaySpec struct {
	// File names the log in reports and errors ("-" for stdin); Input is its content.
	File  string
	Input io.Reader
	// Format is the log's format; Fields map identities onto its columns (--field), and
	// FormatSpec defines a format that takes a definition (nginx's log_format).
	Format     traffic.LogFormat
	Fields     map[string]string
	FormatSpec string
	// Policy and Key are the single limit replayed, unless Layers are given: then each
	// layer is a limit, narrowest first, and Policy's window is the run's.
	Policy algorithms.Policy
	Key    string
	Layers []scenario.LimitSpec
	// TimeScale multiplies the gaps between requests (0.5 plays the log twice as fast).
	TimeScale float64
	// Reorder, Placement and Strict are as traffic.LogReaderOptions has them; the seed
	// of the placement is the run's.
	Reorder   time.Duration
	Placement string
	Strict    bool
	// ParseWorkers is how many goroutines parse the log (0: GOMAXPROCS); the results do
	// not depend on it.
	ParseWorkers int
}

// keys are the key specs the replay keys on, the single key or the layers'.
func (s ReplaySpec) keys() []string {
	if len(s.Layers) == 0 {
		return []string{s.Key}
	}
	var out []string
	for _, l := range s.Layers {
		out = append(out, l.Key)
	}
	return out
}

// logConfig is what the replay reads of each line: the identities its keys read, who
// sent it for the harm figures, and the plan for per-plan quotas.
func (s ReplaySpec) logConfig() (traffic.LogConfig, error) {
	c := traffic.LogConfig{Fields: s.Fields, Spec: s.FormatSpec, Want: traffic.WantActor | traffic.WantPlan}
	for _, k := range s.keys() {
		keyer, err := traffic.ParseKeyer(k)
		if err != nil {
			return c, err
		}
		c.Want |= keyer.Reads()
		if h := keyer.Header(); h != "" && !containsString(c.Headers, h) {
			c.Headers = append(c.Headers, h)
		}
	}
	return c, nil
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Replay reads the log of spec and runs every chosen algorithm over it, as Run runs a
// scenario; the report says what was read of the log (report.ReplayLog).
func Replay(spec ReplaySpec, o Options) (*report.Report, time.Time, error) {
	rep, sc, err := replay(spec, o)
	if err != nil {
		return nil, time.Time{}, err
	}
	return rep, sc.EpochTime(), nil
}

func replay(spec ReplaySpec, o Options) (*report.Report, *scenario.Scenario, error) {
	cfg, err := spec.logConfig()
	if err != nil {
		return nil, nil, err
	}
	seed := uint64(scenario.DefaultSeed)
	if o.Seed != nil {
		seed = *o.Seed
	}
	lr, err := traffic.OpenLog(spec.Input, traffic.LogReaderOptions{Format: spec.Format, Config: cfg, Workers: spec.ParseWorkers,
		Reorder: spec.Reorder, Placement: spec.Placement, Seed: seed, Strict: spec.Strict})
	if err != nil {
		return nil, nil, spec.lineError(err)
	}
	defer lr.Close()
	log := &traffic.AccessLog{}
	var l traffic.LogLine
	for lr.Next(&l) {
		log.Entries = append(log.Entries, traffic.LogEntry{Time: time.Unix(0, l.Time).UTC(), Line: l.Line, Request: l.Request})
	}
	if err := lr.Err(); err != nil {
		return nil, nil, spec.lineError(err)
	}
	st := lr.Stats()
	if err := traffic.CheckUnread(st, spec.Format.Name); err != nil {
		return nil, nil, err
	}
	key := spec.Key
	if len(spec.Layers) > 0 {
		key = spec.Layers[0].Key
	}
	sc, err := scenario.FromLog(spec.File, log, spec.Policy, key, spec.TimeScale)
	if err != nil {
		return nil, nil, err
	}
	sc.Name = ReplayName(spec.File)
	sc.Limits = spec.Layers
	o.Seed = &seed
	rep, err := Run(sc, o)
	if err != nil {
		return nil, nil, err
	}
	rep.Log = spec.summary(st)
	rep.UnreadLines = st.Unreadable
	for _, p := range st.Problems {
		rep.UnreadLineProblems = append(rep.UnreadLineProblems, p.String())
	}
	return rep, sc, nil
}

// lineError places a strict read's first unread line in the file.
func (s ReplaySpec) lineError(err error) error {
	var le *traffic.LineError
	if errors.As(err, &le) {
		le.File = s.File
	}
	return err
}

// summary is the report's account of the log.
func (s ReplaySpec) summary(st traffic.LogStats) *report.ReplayLog {
	l := &report.ReplayLog{
		File: s.File, Format: s.Format.Name, Lines: st.Lines, Used: st.Used,
		Unreadable: st.Unreadable, OutOfOrder: st.Late, OtherShards: st.OtherShard,
		ReorderWindow: report.Duration(s.Reorder), WholeSeconds: st.Whole, Placement: s.placement(),
	}
	if st.Used+st.OtherShard > 0 {
		l.From = time.Unix(0, st.First).UTC().Format(time.RFC3339Nano)
		l.To = time.Unix(0, st.Last).UTC().Format(time.RFC3339Nano)
	}
	if st.Whole > 0 {
		l.PlacementEffect = traffic.PlacementDocs[l.Placement]
	}
	return l
}

func (s ReplaySpec) placement() string {
	if s.Placement == "" {
		return "start"
	}
	return s.Placement
}

// ReplayName is the name a replay's results go under: the log's file name without its
// extensions (.log.gz too), "stdin" for "-".
func ReplayName(file string) string {
	if file == "-" {
		return "stdin"
	}
	name := filepath.Base(file)
	name = strings.TrimSuffix(name, ".gz")
	return strings.TrimSuffix(name, filepath.Ext(name))
}
