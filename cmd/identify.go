package cmd

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/probe"
	"github.com/rlsim/rlsim/traffic"
)

type identifyOptions struct {
	*globalOptions
	file        string
	nginxFormat string
	keyVar      string
	best        int
	// serverLog and serverLogFormat: the server's log of the probe's requests.
	serverLog       string
	serverLogFormat string
}

func newIdentifyCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &identifyOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "identify FILE",
		Short: "Name the limiter behind a probe's decisions file or an nginx log of limit_req",
		Long: `identify reads the decisions an endpoint made and searches the catalogue of rlsim
algorithms — every model, with rates, bursts and windows read off the admissions — for
the configurations that reproduce them, and prints the best with their agreement, as
rlsim probe --identify does while probing.

FILE is a probe's decisions file (rlsim probe --decisions FILE): arrivals are estimated
from the send and answer times as the probe estimates them. With --nginx-log-format it is
an nginx access log written by that log_format, which must hold $limit_req_status,
$msec and $request_time (the arrival is $msec − $request_time, on nginx's own clock), and
the variable the zone is keyed by (--key-var). PASSED and DELAYED are admissions, REJECTED
a refusal (the _DRY_RUN forms alike); a line without a status is left out.

--server-log LOG, with a decisions file, judges on the arrival times the server's own log
recorded for the probe's requests (found by the tag each carried in X-Rlsim-Probe, the
decisions file's tag column; --server-log-format as rlsim probe takes it, docs/probe.md).`,
		Example: `  # a probe's decisions file (rlsim probe URL --scenario FILE --decisions decisions.csv)
  rlsim identify decisions.csv
  # a probe's decisions judged on the arrival times of nginx's own log of them (probe --server-log)
  rlsim identify cmd/testdata/probe-decisions-nginx-tag.csv --server-log cmd/testdata/probe-nginx-tag.log
  # an nginx log of one location, keyed by X-User
  rlsim identify limits.log --key-var http_x_user --nginx-log-format '$msec $request_time $limit_req_status $uri $http_x_user'`,
		Args: argCount(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			return runIdentify(o, streams)
		},
	}
	f := c.Flags()
	f.StringVar(&o.nginxFormat, "nginx-log-format", "", "FILE is an nginx log written by this log_format (with $limit_req_status)")
	f.StringVar(&o.keyVar, "key-var", "remote_addr", "with --nginx-log-format: the variable the zone is keyed by, without its $")
	f.IntVar(&o.best, "best", identifyBest, "how many configurations to print")
	f.StringVar(&o.serverLog, "server-log", "", "with a decisions file: judge on the arrival times in the server's log of the probe's requests")
	f.StringVar(&o.serverLogFormat, "server-log-format", "nginx", "with --server-log: nginx, an nginx log_format, haproxy or haproxy:N (as rlsim probe takes it)")
	g.addFormatFlag(c, allFormats...)
	return c
}

// identifyReport is the JSON form of `rlsim identify`.
type identifyReport struct {
	Source     string             `json:"source"`
	Decisions  int                `json:"decisions"`
	Keys       int                `json:"keys"`
	OneWayMS   float64            `json:"one_way_ms"`
	JitterMS   float64            `json:"jitter_ms"`
	Pattern    identifyPattern    `json:"pattern"`
	Identified []probe.Identified `json:"identified"`
	// ServerLog, with --server-log: how the decisions were found in the server's log.
	ServerLog *probe.LogMatch `json:"server_log,omitempty"`
}

// identifyPattern is what the search read off the admissions (probe.Pattern): the fewest
// admissions of a key before its first refusal, the admitted rate after it over every key
// and at most for one key, per second, and whether admissions were held back.
type identifyPattern struct {
	FirstRun   int64   `json:"first_run"`
	Rate       float64 `json:"rate_per_s"`
	MaxKeyRate float64 `json:"max_key_rate_per_s"`
	Delayed    bool    `json:"delayed"`
}

func runIdentify(o *identifyOptions, streams IO) error {
	if o.best < 1 {
		return usagef("--best: must be at least 1, got %d", o.best)
	}
	var obs probe.Observed
	var err error
	var serverLog *probe.ServerLog
	if o.serverLog != "" {
		if o.nginxFormat != "" {
			return usagef("--server-log: reads the server's log of a probe's decisions file; FILE is a log already (--nginx-log-format)")
		}
		if serverLog, err = probe.OpenServerLog(o.serverLog, o.serverLogFormat, false); err != nil {
			return usagef("--server-log %s: %v", o.serverLog, err)
		}
	}
	if o.nginxFormat != "" {
		obs, err = readNginxDecisions(o.file, o.nginxFormat, o.keyVar)
	} else {
		var f *os.File
		if f, err = os.Open(o.file); err != nil {
			return err
		}
		obs, err = probe.ReadDecisions(f, o.file)
		f.Close()
	}
	if err != nil {
		return err
	}
	var logMatch *probe.LogMatch
	if serverLog != nil {
		run, err := probe.RunOf(obs, o.file)
		if err != nil {
			return err
		}
		m := probe.LogMatch{}
		if obs, m, err = serverLog.Match(nil, nil, obs, run); err != nil {
			return err
		}
		logMatch = &m
	}
	found, p, err := probe.Identify(obs, o.best)
	if errors.Is(err, probe.ErrNothingRefused) {
		return fmt.Errorf("%s: %w", o.file, err)
	}
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	for _, d := range obs.Decisions {
		keys[d.Key] = true
	}
	rep := identifyReport{Source: o.file, Decisions: len(obs.Decisions), Keys: len(keys), OneWayMS: probe.Millis(obs.OneWay),
		JitterMS: probe.Millis(obs.Jitter), Pattern: patternOf(p),
		Identified: probe.IdentifiedOf(found), ServerLog: logMatch}
	var buf bytes.Buffer
	t := probe.IdentifiedTable(rep.Identified)
	t.Notes = append(t.Notes, fmt.Sprintf("%d decisions of %d keys from %s, arrivals known to ±%.2f ms.",
		rep.Decisions, rep.Keys, filepath.Base(rep.Source), rep.JitterMS))
	t.Notes = append(t.Notes, rep.Pattern.lines()...)
	if rep.ServerLog != nil {
		t.Notes = append(t.Notes, serverLogLines(*rep.ServerLog)...)
	}
	err = writeOutput(&buf, o.format, output{JSON: rep, Human: humanTables(t), CSV: func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write([]string{"rank", "model", "agreed", "within_jitter", "decisions", "agreement"})
		for i, c := range rep.Identified {
			cw.Write([]string{strconv.Itoa(i + 1), c.Model, strconv.Itoa(c.Agreed), strconv.Itoa(c.WithinJitter),
				strconv.Itoa(c.Decisions), strconv.FormatFloat(c.Agreement, 'g', -1, 64)})
		}
		cw.Flush()
		return cw.Error()
	}})
	if err != nil {
		return err
	}
	_, err = streams.Out.Write(buf.Bytes())
	return err
}

func patternOf(p probe.Pattern) identifyPattern {
	ip := identifyPattern{FirstRun: p.FirstRun, Rate: p.Rate, Delayed: p.Delayed}
	for _, r := range p.Rates {
		ip.MaxKeyRate = max(ip.MaxKeyRate, r)
	}
	return ip
}

// lines are the pattern as the notes say it.
func (p identifyPattern) lines() []string {
	held := "none held back"
	if p.Delayed {
		held = "some held back (queued)"
	}
	return []string{
		fmt.Sprintf("Read off the admissions: at least %d before a key's first refusal, %s;", p.FirstRun, held),
		fmt.Sprintf("admitted after it: %.2f/s over all keys, %.2f/s at most for one key.", p.Rate, p.MaxKeyRate),
	}
}

// nginxLogReorder is how far out of order an nginx log's lines may be: nginx writes a
// line when the request completes, so a request it delayed is logged after later ones.
const nginxLogReorder = time.Minute

// readNginxDecisions reads the decisions of an nginx log written by format, keyed by
// the variable keyVar, through the traffic package's reader of nginx log formats.
func readNginxDecisions(path, format, keyVar string) (probe.Observed, error) {
	lf, err := traffic.LookupLogFormat("nginx")
	if err != nil {
		return probe.Observed{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return probe.Observed{}, err
	}
	defer f.Close()
	lr, err := traffic.OpenLog(f, traffic.LogReaderOptions{
		Format: lf, Strict: true, Reorder: nginxLogReorder, Workers: 1,
		Config: traffic.LogConfig{Spec: format, Want: traffic.WantUser | traffic.WantActor,
			Fields: map[string]string{"user": keyVar, "actor": "limit_req_status"}},
	})
	if err != nil {
		return probe.Observed{}, usagef("--nginx-log-format: %v", err)
	}
	defer lr.Close()
	var ds []probe.Decision
	var l traffic.LogLine
	for lr.Next(&l) {
		var admitted bool
		switch l.Request.Actor {
		case "PASSED", "DELAYED", "DELAYED_DRY_RUN":
			admitted = true
		case "REJECTED", "REJECTED_DRY_RUN":
		case "":
			continue
		default:
			return probe.Observed{}, fmt.Errorf("%s:%d: $limit_req_status %q: want PASSED, DELAYED or REJECTED", path, l.Line, l.Request.Actor)
		}
		status := 200
		if !admitted {
			status = 0
		}
		ds = append(ds, probe.Decision{Seq: l.Line, Key: l.Request.User, Cost: 1, Arrival: l.Time, Status: status, Admitted: admitted})
	}
	if err := lr.Err(); err != nil {
		return probe.Observed{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(ds) == 0 {
		return probe.Observed{}, fmt.Errorf("%s: no line with a $limit_req_status", path)
	}
	return probe.Estimate(ds), nil
}

// serverLogLines are the notes that say how the decisions were found in the server's
// log, each within the 100 columns of a terminal.
func serverLogLines(m probe.LogMatch) []string {
	n := m.Matched + len(m.Missing)
	lines := []string{
		fmt.Sprintf("Arrivals from the server's log %s (%s): %d of %d requests found,", filepath.Base(m.File), m.Format, m.Matched, n),
		fmt.Sprintf("%d lines read, %d of other traffic, %d logged more than once (judged at the first).", m.Lines, m.Other, m.LoggedTwice),
	}
	if len(m.Missing) == 0 {
		return lines
	}
	line := fmt.Sprintf("Missing, judged at their send time %+.2f ms:", m.OffsetMS)
	for _, r := range m.Missing {
		name := fmt.Sprintf(" seq %d (key %s, tag %s)", r.Seq, r.Key, r.Tag)
		if len(line)+len(name) > 95 {
			lines = append(lines, line)
			line = " "
		}
		line += name
	}
	return append(lines, line+".")
}
