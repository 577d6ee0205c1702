package report

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration marshals to JSON as Go writes durations ("1m0s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Policy is the advertised policy as reports print it.
type Policy struct {
	Limit  int64    `json:"limit"`
	Window Duration `json:"window"`
	Burst  int64    `json:"burst"`
}

// Report is one scenario's results: the JSON object of DESIGN.md.
type Report struct {
	Scenario    string   `json:"scenario"`
	Description string   `json:"description,omitempty"`
	Seed        uint64   `json:"seed"`
	Policy      Policy   `json:"policy"`
	Key         string   `json:"key"`
	Results     []Result `json:"results"`
	// UnreadLines counts the lines of a replayed log that could not be read;
	// UnreadLineProblems names the first few ("line 7: ...").
	UnreadLines        int      `json:"unread_lines,omitempty"`
	UnreadLineProblems []string `json:"unread_line_problems,omitempty"`
	// Log is what a replay read of its log; nil for every other run.
	Log *ReplayLog `json:"log,omitempty"`
	// Retries holds the closed-loop clients' results of a scenario with a clients section.
	Retries []RetryResult `json:"retries,omitempty"`
	// KeyRuns are the same traffic run under the scenario's compare_keys, for the keying
	// chart; not part of the JSON (each is `rlsim compare --key K` on the scenario).
	KeyRuns []KeyRun `json:"-"`
	// Memory is what the run held per key; only when asked for (heavy scenarios, --memory).
	Memory *Memory `json:"memory,omitempty"`
	// Reproduce is the command line that makes this report again, for captions and the
	// summary; empty: `rlsim compare --scenario NAME --seed N` (see Command).
	Reproduce string `json:"-"`
}

// Command is the command line that reproduces r.
func (r *Report) Command() string {
	if r.Reproduce != "" {
		return r.Reproduce
	}
	return fmt.Sprintf("rlsim compare --scenario %s --seed %d", r.Scenario, r.Seed)
}
