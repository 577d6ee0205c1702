package cmd

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/report"
)

// The acceptance line of Finagle's budget: 1000 clients in one process, every attempt
// failing, retry a reserve of 10 a second over 10 s plus 20% of their 1000 requests:
// 1000 + 100 + 200 calls. The strategy help names every policy.
func TestBackoffRetryBudgetIsFinagles(t *testing.T) {
	out, errOut, code := rlsim(t, "backoff", "--model", "rate-limited", "--hiccup", "100000s", "--base", "1s", "--cap", "1s",
		"--clients", "1000", "--processes", "1", "--strategies", "constant+retry-budget", "--runs", "1", "--charts", "none", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Results []report.RetryResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 1 || doc.Results[0].CallsMean != 1300 {
		t.Fatalf("calls %+v, want 1300", doc.Results)
	}
	help, _, _ := rlsim(t, "backoff", "--help")
	for _, name := range []string{"retry-budget", "retry-throttle", "retry-quota", "adaptive", "circuit-breaker", "sre-throttle", "resilience4j-breaker"} {
		if !strings.Contains(help, name) {
			t.Errorf("backoff --help does not name %s", name)
		}
	}
}

// The acceptance line of the clients issue, literally: calls, completion p50/p99, peak,
// wasted, give-ups and duplicates per strategy, a bare policy read as full jitter with it,
// and the three verdicts computed from the table.
func TestBackoffAcceptanceLine(t *testing.T) {
	out, errOut, code := rlsim(t, "backoff", "--model", "rate-limited", "--strategies", "full-jitter,constant,retry-budget,adaptive", "--runs", "3", "--charts", "none")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	header := regexp.MustCompile(`│\s*strategy\s*│\s*calls\s*│\s*p50\s*│\s*p99\s*│\s*max\s*│\s*peak\s*│\s*wasted\s*│\s*gave\s*│\s*done\s*│\n│\s*│\s*│\s*\(s\)\s*│\s*\(s\)\s*│\s*\(s\)\s*│\s*│\s*│\s*up\s*│\s*twice\s*│`)
	if !header.MatchString(out) {
		t.Fatalf("header:\n%s", out)
	}
	for _, row := range []string{"│ full-jitter ", "│ constant ", "│ full-jitter+retry-budget ", "│ full-jitter+adaptive "} {
		if !strings.Contains(out, row) {
			t.Errorf("no row %q:\n%s", row, out)
		}
	}
	// Constant backoff drains first (Retry-After keeps it at the bucket's pace) but makes
	// the most calls and the tallest waves: no strategy wins all three.
	for _, v := range []string{
		"fewest calls: full-jitter+adaptive, ",
		"fastest to drain: constant, the last client done at 9.7 s",
		"gentlest peak: ",
		"no strategy wins all three",
	} {
		if !strings.Contains(out, v) {
			t.Errorf("no verdict %q:\n%s", v, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "│") && len([]rune(line)) > 100 {
			t.Errorf("a table line of %d columns: %s", len([]rune(line)), line)
		}
	}
}

// The overload model reports the amplification, in the table and the JSON, and draws the
// load against the backend's capacity.
func TestBackoffOverload(t *testing.T) {
	args := []string{"backoff", "--model", "overload", "--clients", "1500", "--capacity", "100", "--processes", "5",
		"--strategies", "exponential,exponential+retry-throttle", "--runs", "2"}
	out, errOut, code := rlsim(t, append(args, "--charts", "none")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "│ amp  │") || !strings.Contains(out, "withheld") || !strings.Contains(out, "5 client processes") {
		t.Fatalf("table:\n%s", out)
	}
	r := backoffRun(t, args[1:]...)
	var full struct {
		Processes int `json:"processes"`
		Results   []struct {
			Strategy      string  `json:"strategy"`
			Amplification float64 `json:"amplification"`
			Requests      float64 `json:"requests"`
			Withheld      float64 `json:"withheld"`
			LoadPeak      float64 `json:"load_peak"`
			P99           float64 `json:"completion_ms_p99"`
		} `json:"results"`
		Verdicts []struct {
			Question string `json:"question"`
		} `json:"verdicts"`
	}
	js, _, _ := rlsim(t, append(args, "--format", "json", "--charts", "none")...)
	if err := json.Unmarshal([]byte(js), &full); err != nil {
		t.Fatal(err)
	}
	if one, _, _ := rlsim(t, append(args, "--format", "json", "--charts", "none", "--workers", "1")...); one != js {
		t.Fatal("one worker gave other bytes than many: the policies' state leaks between runs")
	}
	if r.Model != "overload" || full.Processes != 5 || len(full.Results) != 2 || len(full.Verdicts) != 3 {
		t.Fatalf("%s", js)
	}
	expo, thr := full.Results[0], full.Results[1]
	if expo.Requests != 1500 || expo.Amplification <= 1.5 || thr.Amplification >= expo.Amplification || thr.Withheld == 0 || expo.P99 <= 0 || expo.LoadPeak <= 0 {
		t.Fatalf("%+v", full.Results)
	}
	dir := t.TempDir()
	if _, errOut, code := rlsim(t, append(args, "--charts", "svg", "--out", dir)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	svg := readFile(t, dir+"/backoff-overload/load.svg")
	if !strings.Contains(string(svg), "capacity (10 per bin)") || !strings.Contains(string(svg), "exponential+retry-throttle") {
		t.Fatal("the load chart lacks the capacity line or a strategy's panel")
	}
}

func TestBackoffPolicyFlagsAreChecked(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--strategies", "exponential+retry-budget+retry-budget"}, `--strategies: strategy "exponential+retry-budget+retry-budget": policy "retry-budget" appears twice`},
		{[]string{"--model", "rate-limited", "--strategies", "retry-budget,full-jitter+retry-budget"}, "--strategies: full-jitter+retry-budget is listed twice"},
		{[]string{"--strategies", "retry-budget"}, "--strategies: full-jitter+retry-budget: policies read the server's answers; use them with --model rate-limited or overload"},
		{[]string{"--model", "rate-limited", "--budget-ratio", "-5%"}, "--budget-ratio: must be between 0 and 100"},
		{[]string{"--model", "rate-limited", "--budget-ratio", "lots"}, `invalid argument "lots" for "--budget-ratio"`},
		{[]string{"--model", "rate-limited", "--jitter", "150%"}, "--jitter: must be between 0% and 100%, got 150%"},
		{[]string{"--model", "rate-limited", "--throttle-max-tokens", "0"}, "--throttle-max-tokens: must be between 1 and 1000"},
		{[]string{"--model", "rate-limited", "--quota-retry-cost", "600"}, "--quota-retry-cost: must be between 0 and the capacity 500"},
		{[]string{"--model", "rate-limited", "--adaptive-beta", "1"}, "--adaptive-beta: must be between 0 and 1"},
		{[]string{"--model", "rate-limited", "--breaker-open-for", "0s"}, "--breaker-open-for: must be positive"},
		{[]string{"--model", "rate-limited", "--error-mix", "429=5%"}, "--error-mix: 429 is the limiter's answer"},
		{[]string{"--model", "rate-limited", "--retry-after-precision", "us"}, `--retry-after-precision: want s or ms, got "us"`},
		{[]string{"--model", "rate-limited", "--retry-all-errors"}, "--retry-all-errors: a client that retries a 400 retries it for ever"},
		{[]string{"--model", "rate-limited", "--processes", "-1"}, "--processes: must be between 0"},
		{[]string{"--model", "rate-limited", "--capacity", "10"}, "--capacity: applies to --model overload, not rate-limited"},
		{[]string{"--model", "occ", "--error-mix", "503=1%"}, "--error-mix: applies to --model rate-limited, not occ"},
		{[]string{"--model", "overload", "--error-mix", "503=1%"}, "--error-mix: applies to --model rate-limited, not overload"},
		{[]string{"--model", "overload", "--capacity", "0"}, "--capacity: must be between 0 and 1e9"},
		{[]string{"--model", "overload", "--load-window", "0s"}, "--load-window: must be positive"},
	} {
		out, errOut, code := rlsim(t, append([]string{"backoff"}, tt.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", tt.args, code, out, errOut, tt.want)
		}
	}
}
