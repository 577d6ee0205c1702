package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rlsim/rlsim/gateway"
)

// constructedLog writes a log whose answer is known by construction: five users each
// send bursts of 4 at once every 2 s (2 per second on average) for a minute, each from
// an address of its own; one attacker sends 20 per second (10×) for 5 s from
// 203.0.113.9. format is jsonl (labelled) or csv (no labels: --attacker names them).
func constructedLog(t *testing.T, format string) string {
	t.Helper()
	type line struct {
		at         time.Duration
		user, ip   string
		attacker   bool
		sequenceNo int
	}
	var lines []line
	for u := range 5 {
		for at := time.Duration(u) * 100 * time.Millisecond; at < time.Minute; at += 2 * time.Second {
			for range 4 {
				lines = append(lines, line{at: at, user: fmt.Sprintf("user_%d", u), ip: fmt.Sprintf("198.51.100.%d", u+1)})
			}
		}
	}
	for i := range 100 {
		lines = append(lines, line{at: 30*time.Second + time.Duration(i)*50*time.Millisecond, user: "mallory", ip: "203.0.113.9", attacker: true})
	}
	for i := range lines {
		lines[i].sequenceNo = i
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at < lines[j].at })
	epoch := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	if format == "csv" {
		b.WriteString("time,ip,user\n")
	}
	for _, l := range lines {
		ts := epoch.Add(l.at).Format("2006-01-02T15:04:05.000Z")
		label := map[bool]string{true: "attacker", false: "legit"}[l.attacker]
		if format == "csv" {
			fmt.Fprintf(&b, "%s,%s,%s\n", ts, l.ip, l.user)
		} else {
			fmt.Fprintf(&b, `{"time":%q,"ip":%q,"user":%q,"label":%q}`+"\n", ts, l.ip, l.user, label)
		}
	}
	path := filepath.Join(t.TempDir(), "constructed."+format)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type tuneJSON struct {
	Requests    int        `json:"requests"`
	Recommended *tunePoint `json:"recommended"`
	Closest     *tunePoint `json:"closest"`
	Verified    *struct {
		By        string   `json:"by"`
		Figures   []string `json:"figures"`
		Decisions int64    `json:"decisions"`
	} `json:"verified"`
	Front     []tunePoint `json:"front"`
	RunnersUp []tunePoint `json:"runners_up"`
	Costs     []struct {
		Says string `json:"says"`
	} `json:"costs"`
	Space struct {
		Algorithms []string `json:"algorithms"`
		Keys       []string `json:"keys"`
	} `json:"space"`
	Evaluated int `json:"evaluated"`
}

type tunePoint struct {
	Algorithm          string   `json:"algorithm"`
	Spec               string   `json:"spec"`
	Key                string   `json:"key"`
	Limit              int64    `json:"limit"`
	Window             string   `json:"window"`
	Burst              int64    `json:"burst"`
	Requests           int64    `json:"requests"`
	Admitted           int64    `json:"admitted"`
	Rejected           int64    `json:"rejected"`
	LegitRejectRate    *float64 `json:"legit_reject_rate"`
	AttackerAdmitRate  *float64 `json:"attacker_admit_rate"`
	BackendPeak        int64    `json:"backend_peak"`
	PeakWindowAdmitted int64    `json:"peak_window_admitted"`
	OverAdmission      float64  `json:"over_admission"`
	FalseReject        int64    `json:"false_reject"`
}

func tuneRun(t *testing.T, args ...string) tuneJSON {
	t.Helper()
	out, errOut, code := rlsim(t, append([]string{"tune"}, append(args, "--format", "json")...)...)
	if code != 0 {
		t.Fatalf("rlsim tune %v: exit %d: %s", args, code, errOut)
	}
	var r tuneJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("tune JSON: %v\n%s", err, out)
	}
	return r
}

// TestTuneFindsTheConstructedPolicy is the acceptance: on the constructed log, the token
// bucket recommended admits every legitimate request at rate ≥ 2/s and burst ≥ 4, and
// lets through what a hand calculation gives of the attacker: its bucket starts full (4)
// and refills at 2/s over the 4.95 s between its first and last request, floor(4 +
// 9.9) = 13 of its 100. The labels come from the log's label field (JSON lines) and from
// --attacker (CSV), keyed by user and by address.
func TestTuneFindsTheConstructedPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format string
		extra  []string
	}{
		{"jsonl", nil},
		{"csv", []string{"--attacker", "ip=203.0.113.0/24"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			log := constructedLog(t, tc.format)
			args := append([]string{log, "--algorithms", "token-bucket", "--key", "user,ip", "--window", "1s", "--limit", "1..10",
				"--goal", "legit-refused<=0%"}, tc.extra...)
			r := tuneRun(t, args...)
			rec := r.Recommended
			if rec == nil {
				t.Fatalf("no recommendation: %+v", r.Closest)
			}
			if rec.Limit < 2 || rec.Burst < 4 || rec.LegitRejectRate == nil || *rec.LegitRejectRate != 0 {
				t.Fatalf("recommended %s %d/%s burst %d refusing %v of legit requests; want rate >= 2/s, burst >= 4, none",
					rec.Spec, rec.Limit, rec.Window, rec.Burst, rec.LegitRejectRate)
			}
			if rec.AttackerAdmitRate == nil || *rec.AttackerAdmitRate != 0.13 {
				t.Fatalf("attacker admitted %v, want 13 of 100", rec.AttackerAdmitRate)
			}
			if r.Verified == nil || len(r.Verified.Figures) < 7 {
				t.Fatalf("the recommendation was not re-checked: %+v", r.Verified)
			}
			if tc.extra != nil && r.Verified.Decisions != int64(r.Requests) {
				t.Fatalf("--attacker: %d decisions compared, want all %d", r.Verified.Decisions, r.Requests)
			}
			// The same figures as rlsim replay prints for that policy.
			out, errOut, code := rlsim(t, "replay", log, "--key", rec.Key, "--algorithms", rec.Spec, "--limit", fmt.Sprint(rec.Limit),
				"--window", rec.Window, "--burst", fmt.Sprint(rec.Burst), "--format", "json")
			if code != 0 {
				t.Fatalf("replay: exit %d: %s", code, errOut)
			}
			var rep struct {
				Results []tunePoint `json:"results"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Results) != 1 {
				t.Fatalf("replay JSON: %v\n%s", err, out)
			}
			got := rep.Results[0]
			if got.Requests != rec.Requests || got.Admitted != rec.Admitted || got.Rejected != rec.Rejected ||
				got.BackendPeak != rec.BackendPeak || got.PeakWindowAdmitted != rec.PeakWindowAdmitted ||
				got.OverAdmission != rec.OverAdmission || got.FalseReject != rec.FalseReject {
				t.Fatalf("replay prints %+v, tune %+v", got, *rec)
			}
			if tc.extra == nil && (got.AttackerAdmitRate == nil || *got.AttackerAdmitRate != *rec.AttackerAdmitRate) {
				t.Fatalf("replay's attacker_admit_rate %v, tune's %v", got.AttackerAdmitRate, *rec.AttackerAdmitRate)
			}
		})
	}
}

func TestTuneSearchesEveryFamilyAndKeyOfAScenario(t *testing.T) {
	r := tuneRun(t, "ip-rotation", "--key", "ip,user", "--window", "1s,1m", "--goal", "legit-refused<=1%", "--out", "")
	if r.Recommended == nil || r.Verified == nil || !strings.HasPrefix(r.Verified.By, "rlsim run ip-rotation") {
		t.Fatalf("no re-checked recommendation: %+v %+v", r.Recommended, r.Verified)
	}
	algs := map[string]bool{}
	for _, p := range r.RunnersUp {
		algs[p.Algorithm] = true
	}
	if len(algs) < 3 || len(r.Space.Keys) != 2 || r.Evaluated < 2*3*2 {
		t.Fatalf("runners-up of %v, keys %v, %d candidates; want all three default algorithms, both keys", algs, r.Space.Keys, r.Evaluated)
	}
	if len(r.Costs) != 1 || r.Costs[0].Says == "" {
		t.Fatalf("costs %+v, want one per goal", r.Costs)
	}
}

func TestTuneErrors(t *testing.T) {
	log := constructedLog(t, "jsonl")
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--goal", "legit-refused<0.1%"}, 2, []string{"--goal", "column 14", "<="}},
		{[]string{"--goal", "legit-refused<=0.1x"}, 2, []string{"--goal", "column 16"}},
		{[]string{"--goal", "key-refused<=1%"}, 2, []string{"--goal", "@p99.9"}},
		{[]string{"--products", "kong", "--window", "10s"}, 2, []string{"search space is empty"}},
		{[]string{"--limit", "9..3"}, 2, []string{"--limit", "empty"}},
		{[]string{"--algorithms", "nginx:rate=1r/s"}, 2, []string{"--products nginx"}},
		{[]string{"--attacker", "status=401"}, 2, []string{"--attacker", "status"}},
		{[]string{"--for", "apache"}, 2, []string{"--for", "apache"}},
		{[]string{"--key", "user,ip", "--window", "1s", "--goal", "legit-refused<=0%", "--goal", "attacker-admitted<=1%"}, 1,
			[]string{"no policy in the space meets the goals", "closest", "attacker-admitted<=1% by"}},
	} {
		out, errOut, code := rlsim(t, append([]string{"tune", log}, tc.args...)...)
		if code != tc.code {
			t.Errorf("%v: exit %d (%s), want %d", tc.args, code, errOut, tc.code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errOut, w)
			}
		}
		if tc.code == 2 && out != "" {
			t.Errorf("%v: a bad command line printed %q", tc.args, out)
		}
	}
}

// TestTuneForAGatewaySearchesItsModel: --for nginx searches nginx's model alone and
// prints its configuration, which import reads back as the recommended spec and key, and
// which replay, run with what import read, admits exactly as tune said.
func TestTuneForAGatewaySearchesItsModel(t *testing.T) {
	log := constructedLog(t, "jsonl")
	out, errOut, code := rlsim(t, "tune", log, "--for", "nginx", "--key", "user,ip", "--goal", "legit-refused<=0%", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		tuneJSON
		For, Snippet string
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Recommended == nil || r.Recommended.Algorithm != "nginx" || r.For != "nginx" || r.Snippet == "" {
		t.Fatalf("--for nginx: %+v", r)
	}
	for _, p := range r.Front {
		if p.Algorithm != "nginx" {
			t.Fatalf("--for nginx searched %s", p.Spec)
		}
	}
	conf := filepath.Join(t.TempDir(), "nginx.conf")
	if err := os.WriteFile(conf, []byte(r.Snippet), 0o644); err != nil {
		t.Fatal(err)
	}
	read, err := gateway.Read(conf, "")
	if err != nil {
		t.Fatalf("import cannot read the snippet: %v\n%s", err, r.Snippet)
	}
	if len(read.Found) != 1 || read.Found[0].Spec() != r.Recommended.Spec || read.Found[0].Key != r.Recommended.Key {
		t.Fatalf("import reads the snippet of %s keyed %s as %+v", r.Recommended.Spec, r.Recommended.Key, read.Found)
	}
	rec := r.Recommended
	out, errOut, code = rlsim(t, "replay", log, "--key", read.Found[0].Key, "--algorithms", read.Found[0].Spec(),
		"--limit", fmt.Sprint(rec.Limit), "--window", rec.Window, "--burst", fmt.Sprint(rec.Burst), "--format", "json")
	if code != 0 {
		t.Fatalf("replay of the imported snippet: exit %d: %s", code, errOut)
	}
	var rep struct {
		Results []tunePoint `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Results) != 1 {
		t.Fatalf("replay JSON: %v\n%s", err, out)
	}
	got := rep.Results[0]
	if got.Requests != rec.Requests || got.Admitted != rec.Admitted || got.Rejected != rec.Rejected ||
		got.BackendPeak != rec.BackendPeak || got.OverAdmission != rec.OverAdmission || got.FalseReject != rec.FalseReject {
		t.Fatalf("replay of the imported snippet prints %+v, tune recommended %+v", got, *rec)
	}
}

func TestTuneOutputFitsAndCarriesTheFront(t *testing.T) {
	log := constructedLog(t, "jsonl")
	args := []string{"tune", log, "--key", "user,ip", "--goal", "legit-refused<=1%", "--window", "1s,10s"}
	out, errOut, code := rlsim(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("line %d is %d columns: %s", i+1, n, line)
		}
	}
	for _, want := range []string{"recommended:", "runner-up of each algorithm", "what each goal costs", "Pareto front"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	js := tuneRun(t, args[1:]...)
	csvOut, _, _ := rlsim(t, append(args, "--format", "csv")...)
	md, _, _ := rlsim(t, append(args, "--format", "markdown")...)
	if rows := strings.Count(csvOut, "\n") - 1; rows != len(js.Front) || len(js.Front) < 2 {
		t.Fatalf("CSV has %d rows, the JSON front %d", rows, len(js.Front))
	}
	if got := strings.Count(md, "\n| ") - 2; got < len(js.Front) {
		t.Fatalf("markdown has %d table rows for a front of %d", got, len(js.Front))
	}
	dir := t.TempDir()
	if _, errOut, code := rlsim(t, append(args, "--out", dir, "--charts", "svg")...); code != 0 {
		t.Fatalf("--out: exit %d: %s", code, errOut)
	}
	if fi, err := os.Stat(filepath.Join(dir, "tune-constructed", "front.svg")); err != nil || fi.Size() < 1000 {
		t.Fatalf("front.svg: %v", err)
	}
}

// TestTuneSearchesTheProductsInTheirOwnWords: every product family is searched, written in
// its own parameters, and the recommendation among them is re-checked by replay.
func TestTuneSearchesTheProductsInTheirOwnWords(t *testing.T) {
	log := constructedLog(t, "jsonl")
	r := tuneRun(t, log, "--products", "nginx,haproxy,envoy-local,kong,traefik", "--key", "user,ip", "--window", "1s,1m",
		"--goal", "legit-refused<=0%", "--out", "")
	if r.Recommended == nil || r.Verified == nil {
		t.Fatalf("no re-checked recommendation: %+v", r)
	}
	seen := map[string]string{}
	for _, p := range append(append(r.Front, r.RunnersUp...), *r.Recommended) {
		seen[p.Algorithm] = p.Spec
		if !strings.HasPrefix(p.Spec, p.Algorithm+":") {
			t.Fatalf("%s is written as %q", p.Algorithm, p.Spec)
		}
	}
	if len(seen) < 4 {
		t.Fatalf("products seen: %v", seen)
	}
	if s, ok := seen["nginx"]; ok && !strings.Contains(s, "nodelay") {
		t.Fatalf("nginx spec %q: tune writes nodelay", s)
	}
}
