package claims

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/report"
)

// session runs the claims' commands through the Runner, once each: claims that cite the
// same command share its run. It records, for the claim being measured, every command the
// claim used and the figures it cites.
type session struct {
	cfg      Config
	outputs  map[string][]byte // JSON output by display command line
	files    map[string]string // the decisions file written by a display command line
	dir      string            // a temporary folder for decisions files, made on first use
	evidence []*Evidence       // the commands of the claim being measured
}

func newSession(cfg Config) *session {
	return &session{cfg: cfg, outputs: map[string][]byte{}, files: map[string]string{}}
}

// close removes the session's temporary files.
func (s *session) close() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// exec runs the command args (as a user types it after "rlsim") with --format json and
// no result files, and returns its output and the evidence entry the claim cites from.
// "decisions.csv" after --decisions becomes a file of the session; "URL" after --redis the
// configured server.
func (s *session) exec(args ...string) ([]byte, *Evidence, error) {
	ev := &Evidence{Args: wide(args)}
	s.evidence = append(s.evidence, ev)
	key := strings.Join(args, "\x00")
	if out, ok := s.outputs[key]; ok {
		return out, ev, nil
	}
	run := slices.Clone(args)
	for i := 1; i < len(run); i++ {
		switch run[i-1] {
		case "--decisions":
			if s.dir == "" {
				dir, err := os.MkdirTemp("", "rlsim-claims-")
				if err != nil {
					return nil, nil, err
				}
				s.dir = dir
			}
			run[i] = filepath.Join(s.dir, fmt.Sprintf("decisions-%d.csv", len(s.files)))
			s.files[key] = run[i]
		case "--redis":
			run[i] = s.cfg.RedisURL
		}
	}
	if s.cfg.StoreTimeout > 0 && slices.Contains(run, "--redis") {
		run = append(run, "--store-timeout", s.cfg.StoreTimeout.String())
	}
	run = append(run, "--format", "json")
	out, err := s.cfg.Run(run)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", ev, err)
	}
	s.outputs[key] = out
	return out, ev, nil
}

// wide is the command a user types to see every figure a claim cites: compare, run and
// replay print by default only the columns that matter most for each scenario.
func wide(args []string) []string {
	if len(args) == 0 || !slices.Contains([]string{"compare", "run", "replay"}, args[0]) || slices.Contains(args, "--format") {
		return args
	}
	return append(slices.Clone(args), "--wide")
}

// decode runs args and decodes its JSON output into v.
func (s *session) decode(v any, args ...string) (*Evidence, error) {
	out, ev, err := s.exec(args...)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return nil, fmt.Errorf("%s: reading its JSON: %w", ev, err)
	}
	return ev, nil
}

// report runs a compare or run command of one scenario and returns its report.
func (s *session) report(args ...string) (*report.Report, *Evidence, error) {
	var rep report.Report
	ev, err := s.decode(&rep, args...)
	if err != nil {
		return nil, nil, err
	}
	return &rep, ev, nil
}

// decision is one row of a decisions file.
type decision struct {
	at        time.Duration
	key       string
	cost      int64
	algorithm string
	allowed   bool
	reference bool // the reference's verdict on the request (reference_allowed)
}

// decisions reads the decisions file the command args wrote (it must carry --decisions).
func (s *session) decisions(args ...string) ([]decision, error) {
	path, ok := s.files[strings.Join(args, "\x00")]
	if !ok {
		return nil, fmt.Errorf("rlsim %s wrote no decisions file", strings.Join(args, " "))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("decisions of rlsim %s: %v", strings.Join(args, " "), err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"t_ns", "key", "cost", "algorithm", "allowed", "reference_allowed"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("decisions of rlsim %s: no %s column", strings.Join(args, " "), name)
		}
	}
	out := make([]decision, 0, len(rows)-1)
	for _, row := range rows[1:] {
		ns, err1 := strconv.ParseInt(row[col["t_ns"]], 10, 64)
		cost, err2 := strconv.ParseInt(row[col["cost"]], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("decisions of rlsim %s: row %q", strings.Join(args, " "), row)
		}
		out = append(out, decision{
			at: time.Duration(ns), key: row[col["key"]], cost: cost, algorithm: row[col["algorithm"]],
			allowed: row[col["allowed"]] == "true", reference: row[col["reference_allowed"]] == "true",
		})
	}
	return out, nil
}

// backoff runs a backoff command and returns its rows by strategy.
func (s *session) backoff(args ...string) (map[string]report.RetryResult, *Evidence, error) {
	var run struct {
		Results []report.RetryResult `json:"results"`
	}
	// The command a claim cites prints CSV, which carries every figure of the run; the
	// measurement itself reads the JSON.
	ev, err := s.decode(&run, append(slices.Clone(args), "--format", "csv")...)
	if err != nil {
		return nil, nil, err
	}
	by := map[string]report.RetryResult{}
	for _, r := range run.Results {
		by[r.Strategy] = r
	}
	return by, ev, nil
}

// response is the JSON of `rlsim headers`: the response to the last request of its burst.
type response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func (s *session) headers(args ...string) (response, *Evidence, error) {
	var r response
	ev, err := s.decode(&r, args...)
	return r, ev, err
}

// worstCase is the JSON of `rlsim worst-case`: per algorithm, the most found in one window
// of each span T, against the analytic bound.
type worstCase struct {
	Results []struct {
		Algorithm     string  `json:"algorithm"`
		Bound         float64 `json:"analytic_bound"`
		Formula       string  `json:"bound_formula"`
		BoundReached  bool    `json:"bound_reached"`
		WorstAdmitted int64   `json:"worst_window_admitted"`
		Curve         []struct {
			T             report.Duration `json:"t"`
			Bound         float64         `json:"analytic_bound"`
			WorstAdmitted int64           `json:"worst_window_admitted"`
		} `json:"curve"`
	} `json:"results"`
}

func (s *session) worstCase(args ...string) (worstCase, *Evidence, error) {
	var w worstCase
	ev, err := s.decode(&w, args...)
	return w, ev, err
}

// memory is the JSON of `rlsim memory`.
type memory struct {
	Keys    int    `json:"keys"`
	Limit   int64  `json:"limit"`
	Redis   string `json:"redis"`
	Loaded  int    `json:"loaded"`
	Results []struct {
		Algorithm        string  `json:"algorithm"`
		StateBytesPerKey float64 `json:"state_bytes_per_key"`
		RedisBytesPerKey float64 `json:"redis_bytes_per_key"`
		RedisEncoding    string  `json:"redis_encoding"`
		RedisBytesTotal  int64   `json:"redis_bytes_total"`
	} `json:"results"`
	SlidingLogVsTwoCounters float64 `json:"sliding_log_vs_two_counters"`
	ZsetEncoding            []struct {
		Limit         int64   `json:"limit"`
		Encoding      string  `json:"encoding"`
		BytesPerEntry float64 `json:"bytes_per_entry"`
	} `json:"zset_encoding"`
}

func (s *session) memory(args ...string) (memory, *Evidence, error) {
	var m memory
	ev, err := s.decode(&m, args...)
	return m, ev, err
}

// row returns the memory row of algorithm.
func (m memory) row(algorithm string) (float64, float64, string, int64) {
	for _, r := range m.Results {
		if r.Algorithm == algorithm {
			return r.StateBytesPerKey, r.RedisBytesPerKey, r.RedisEncoding, r.RedisBytesTotal
		}
	}
	return 0, 0, "", 0
}

// result returns the row of algorithm in a single-limiter report.
func result(rep *report.Report, algorithm string) (report.Result, error) {
	for _, x := range rep.Results {
		if x.Algorithm == algorithm && x.Distributed == nil {
			return x, nil
		}
	}
	return report.Result{}, fmt.Errorf("scenario %s: no result for %s", rep.Scenario, algorithm)
}

// fleetRow returns the row of one fleet variant and algorithm in a cluster report.
func fleetRow(rep *report.Report, variant, algorithm string) (report.Result, error) {
	for _, x := range rep.Results {
		if d := x.Distributed; d != nil && d.Variant == variant && x.Algorithm == algorithm {
			return x, nil
		}
	}
	return report.Result{}, fmt.Errorf("scenario %s: no fleet result for %s in variant %s", rep.Scenario, algorithm, variant)
}

// attacker returns one attacker campaign's admitted and sent requests.
func attacker(x report.Result, actor string) (admitted, sent int64, err error) {
	for _, a := range x.Attackers {
		if a.Actor == actor {
			return a.Admitted, a.Requests, nil
		}
	}
	return 0, 0, fmt.Errorf("%s: no attacker campaign %q", x.Algorithm, actor)
}
