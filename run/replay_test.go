package run

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/internal/loggen"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
)

// The reference a streamed replay is held to is what replay did before it streamed: read
// the whole log, sort it, place every line on a scenario's timeline and run the scenario
// through an engine per algorithm. recordedSpec is that scenario's traffic: the log's
// requests, already placed, as one source. It is not registered: no file names it, and a
// section no generator registered takes the engines' path, as recorded traffic did.

type recordedSpec struct{ reqs []traffic.Request }

func (r *recordedSpec) Defaults()                      {}
func (r *recordedSpec) Validate(*scenario.Check) error { return nil }
func (r *recordedSpec) Last(time.Time) time.Duration   { return r.reqs[len(r.reqs)-1].At }
func (r *recordedSpec) Sources(*scenario.Build) []traffic.Source {
	return []traffic.Source{&recordedSource{reqs: r.reqs}}
}

type recordedSource struct {
	reqs []traffic.Request
	next int
}

func (s *recordedSource) Next(r *traffic.Request) bool {
	if s.next >= len(s.reqs) {
		return false
	}
	*r = s.reqs[s.next]
	s.next++
	return true
}

func (s *recordedSource) String() string { return "recorded" }

// referenceReplay runs a log as replay did before it streamed.
func referenceReplay(t *testing.T, log []byte, format, key string, layers []scenario.LimitSpec, p algorithms.Policy, o Options) *report.Report {
	t.Helper()
	l, err := traffic.ReadLog(bytes.NewReader(log), format)
	if err != nil {
		t.Fatal(err)
	}
	epoch := l.Entries[0].Time.Truncate(time.Minute)
	reqs := make([]traffic.Request, len(l.Entries))
	for i, e := range l.Entries {
		reqs[i] = e.Request
		reqs[i].At = time.Duration(float64(e.Time.Sub(epoch)))
	}
	window := p.Window
	for _, l := range layers {
		window = max(window, time.Duration(l.Window))
	}
	e := scenario.Epoch(epoch)
	sc := &scenario.Scenario{Name: "test", Epoch: &e, Duration: scenario.Duration(reqs[len(reqs)-1].At + window),
		Policy: scenario.PolicySpec{Limit: p.Limit, Window: scenario.Duration(p.Window), Burst: p.Burst}, Key: key, Limits: layers,
		BackendWindow: scenario.Duration(time.Second),
		Traffic:       []scenario.TrafficSpec{{Section: "recorded-test", Spec: &recordedSpec{reqs: reqs}}}}
	rep, err := Run(sc, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// identityLog is a JSON-lines log of users and addresses with actors, labels and costs,
// its lines a little out of order (within a second), and a line every 500 that no key of
// the tests can key (no user, no address).
func identityLog(n int) []byte {
	var b bytes.Buffer
	rng := rand.New(rand.NewPCG(5, 6))
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		at := base.Add(time.Duration(i)*20*time.Millisecond - time.Duration(rng.IntN(800))*time.Millisecond)
		u := rng.IntN(40)
		label := "legit"
		if u < 4 {
			label = "attacker"
		}
		if i%500 == 499 {
			fmt.Fprintf(&b, `{"time": %q, "route": "GET /x"}`+"\n", at.Format(time.RFC3339Nano))
			continue
		}
		fmt.Fprintf(&b, `{"time": %q, "ip": "198.51.%d.%d", "user": "u%d", "route": "GET /r%d", "cost": %d, "label": %q, "actor": "a%d"}`+"\n",
			at.Format(time.RFC3339Nano), u%3, u, u, u%4, 1+rng.IntN(2), label, u)
	}
	return b.Bytes()
}

// A streamed replay gives exactly the results of the whole-log replay it replaced — every
// metric, the timeline bin for bin, the harm figures and the unkeyed — for a single key
// (through a pass) and for layered limits (through engines in step), on any number of
// parse and decide workers.
func TestReplayEqualsTheWholeLogReplay(t *testing.T) {
	combinedLog := func() []byte {
		var b bytes.Buffer
		if err := loggen.Write(&b, loggen.Options{Lines: 40000, Addrs: 3000, Rate: 2000, Seed: 2}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}()
	jsonLog := identityLog(12000)
	layers := []scenario.LimitSpec{
		{Name: "per-user", Key: "user", Limit: 20, Window: scenario.Duration(10 * time.Second)},
		{Name: "per-ip", Key: "ip", Limit: 100, Window: scenario.Duration(time.Minute)},
	}
	for _, tt := range []struct {
		name, format, key string
		log               []byte
		layers            []scenario.LimitSpec
		policy            algorithms.Policy
	}{
		{"combined by ip", "combined", "ip", combinedLog, nil, algorithms.Policy{Limit: 30, Window: 10 * time.Second}},
		{"jsonl by user", "jsonl", "user", jsonLog, nil, algorithms.Policy{Limit: 25, Window: 5 * time.Second, Burst: 40}},
		{"jsonl by route", "jsonl", "route", jsonLog, nil, algorithms.Policy{Limit: 300, Window: 2 * time.Second}},
		{"jsonl layered", "jsonl", "", jsonLog, layers, algorithms.Policy{Limit: 20, Window: 10 * time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := referenceReplay(t, tt.log, tt.format, tt.key, tt.layers, tt.policy, Options{})
			f, _ := traffic.LookupLogFormat(tt.format)
			for _, workers := range []int{1, 3} {
				res, err := Replay(ReplaySpec{File: "test.log", Input: bytes.NewReader(tt.log), Format: f, Key: tt.key, Layers: tt.layers,
					Policy: tt.policy, TimeScale: 1, Reorder: time.Second, ParseWorkers: workers}, Options{Workers: workers})
				if err != nil {
					t.Fatal(err)
				}
				rep := res.Report
				if len(rep.Results) != len(want.Results) {
					t.Fatalf("%d results, want %d", len(rep.Results), len(want.Results))
				}
				for i := range want.Results {
					if !reflect.DeepEqual(rep.Results[i], want.Results[i]) {
						t.Errorf("%d workers, %s:\n got %+v\nwant %+v", workers, want.Results[i].Algorithm, rep.Results[i], want.Results[i])
					}
				}
				if rep.Key != want.Key || rep.Policy != want.Policy {
					t.Errorf("key %s policy %+v, want %s %+v", rep.Key, rep.Policy, want.Key, want.Policy)
				}
			}
			if tt.format == "jsonl" && want.Results[0].LegitUsers == 0 && tt.layers == nil {
				t.Error("the log's actors were not measured")
			}
		})
	}
}

// The decisions file of a streamed replay has the rows of the whole-log replay, grouped
// by algorithm in the same order, unkeyed lines and all.
func TestReplayDecisionsAreTheWholeLogReplays(t *testing.T) {
	log := identityLog(3000)
	pol := algorithms.Policy{Limit: 10, Window: 5 * time.Second}
	rows := func(run func(o Options)) string {
		var b bytes.Buffer
		dw := NewDecisionFile(&b)
		run(Options{Decisions: dw})
		if err := dw.Flush(); err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(b.String(), ",test\n", ",x\n")
	}
	want := rows(func(o Options) { referenceReplay(t, log, "jsonl", "user", nil, pol, o) })
	f, _ := traffic.LookupLogFormat("jsonl")
	got := rows(func(o Options) {
		if _, err := Replay(ReplaySpec{File: "x.log", Input: bytes.NewReader(log), Format: f, Key: "user", Policy: pol, TimeScale: 1, Reorder: time.Second}, o); err != nil {
			t.Fatal(err)
		}
	})
	if got != want {
		t.Errorf("the decisions differ: %d and %d bytes", len(got), len(want))
	}
	recs, err := csv.NewReader(strings.NewReader(got)).ReadAll()
	if err != nil || len(recs) != 1+6*3000 {
		t.Fatalf("%v: %d rows", err, len(recs))
	}
	var order []string
	for _, r := range recs[1:] {
		if len(order) == 0 || order[len(order)-1] != r[3] {
			order = append(order, r[3])
		}
	}
	if !slices.Equal(order, algorithms.Defaults()) || !strings.Contains(got, ",(unkeyed),") {
		t.Errorf("rows grouped as %v", order)
	}
}

// What a replay holds grows with its keys, not its lines: four times the lines over the
// same addresses hold about the same memory, and the reorder window holds a few seconds of
// lines whatever the log's length.
func TestReplayMemoryGrowsWithKeysNotLines(t *testing.T) {
	held := func(lines int) *report.Memory {
		var b bytes.Buffer
		if err := loggen.Write(&b, loggen.Options{Lines: lines, Addrs: 2000, Rate: 1000, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		f, _ := traffic.LookupLogFormat("combined")
		res, err := Replay(ReplaySpec{File: "x.log", Input: &b, Format: f, Key: "ip", Policy: algorithms.Policy{Limit: 100, Window: time.Minute},
			TimeScale: 1, Reorder: 10 * time.Second}, Options{Memory: true})
		if err != nil {
			t.Fatal(err)
		}
		return res.Report.Memory
	}
	short, long := held(150000), held(600000) // 2.5 and 10 minutes: windows of a minute long filled
	if short.Keys != long.Keys || short.Keys < 1900 {
		t.Fatalf("keys %d and %d", short.Keys, long.Keys)
	}
	t.Logf("%s\n%s", short, long)
	if r := float64(long.Bytes) / float64(short.Bytes); r > 1.15 || r < 0.85 {
		t.Errorf("four times the lines hold %.2f times the memory (%d and %d bytes)", r, short.Bytes, long.Bytes)
	}
	if long.Buffers > 32<<20 || long.Buffers == 0 {
		t.Errorf("buffers %d bytes", long.Buffers)
	}
}

// The shards of a replay, merged, are the one run over the whole log: every result field,
// the JSON and CSV to the byte, the timeline's bins; for a single key (the addresses of a
// combined log; users, with their actors and unkeyed lines, in JSON lines) and for layers
// split by the layer every other determines. Layers none of which determines the others
// cannot be split, and a set of shards with one missing or one twice is refused.
func TestReplayShardsMergeIntoOneRun(t *testing.T) {
	var combinedLog bytes.Buffer
	if err := loggen.Write(&combinedLog, loggen.Options{Lines: 30000, Addrs: 3000, Rate: 2000, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	jsonLog := identityLog(8000)
	prefixes := []scenario.LimitSpec{
		{Name: "per-ip", Key: "ip", Limit: 30, Window: scenario.Duration(10 * time.Second)},
		{Name: "per-prefix", Key: "ipv6/64", Limit: 200, Window: scenario.Duration(time.Minute)},
	}
	for _, tt := range []struct {
		name, format, key string
		log               []byte
		layers            []scenario.LimitSpec
	}{
		{"combined by ip", "combined", "ip", combinedLog.Bytes(), nil},
		{"jsonl by user", "jsonl", "user", jsonLog, nil},
		{"jsonl by ip and prefix", "jsonl", "", jsonLog, prefixes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := traffic.LookupLogFormat(tt.format)
			spec := func(shard *Shard) ReplaySpec {
				return ReplaySpec{File: "x.log", Input: bytes.NewReader(tt.log), Format: f, Key: tt.key, Layers: tt.layers,
					Policy: algorithms.Policy{Limit: 20, Window: 5 * time.Second}, TimeScale: 1, Reorder: time.Second, Shard: shard}
			}
			whole, err := Replay(spec(nil), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var parts []*ReplayPartial
			var names []string
			for k := 4; k >= 1; k-- { // in any order
				res, err := Replay(spec(&Shard{K: k, N: 4}), Options{})
				if err != nil {
					t.Fatal(err)
				}
				// Through the file a shard writes.
				var buf bytes.Buffer
				if err := report.WriteJSON(&buf, res.Partial); err != nil {
					t.Fatal(err)
				}
				p, err := ReadPartial(&buf)
				if err != nil {
					t.Fatal(err)
				}
				if p.Report.Log.Used == 0 || p.Report.Log.OtherShards == 0 {
					t.Errorf("shard %d/4 replayed %d lines and left %d to the others", k, p.Report.Log.Used, p.Report.Log.OtherShards)
				}
				parts = append(parts, p)
				names = append(names, fmt.Sprintf("part-%d", k))
			}
			merged, _, _, err := MergeReplay(parts, names)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range whole.Report.Results {
				got := merged.Results[i]
				if !slices.Equal(got.Timeline.Admitted, want.Timeline.Admitted) || !slices.Equal(got.Timeline.Refused, want.Timeline.Refused) || got.Timeline.Bin != want.Timeline.Bin {
					t.Errorf("%s: the timelines' bins differ", want.Algorithm)
				}
				got.Timeline, want.Timeline = nil, nil
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s:\n got %+v\nwant %+v", want.Algorithm, got, want)
				}
			}
			for _, w := range []func(io.Writer, []*report.Report) error{
				func(w io.Writer, r []*report.Report) error { return report.WriteJSON(w, r[0]) },
				report.WriteCSV,
			} {
				var a, b bytes.Buffer
				if err := w(&a, []*report.Report{whole.Report}); err != nil {
					t.Fatal(err)
				}
				if err := w(&b, []*report.Report{merged}); err != nil {
					t.Fatal(err)
				}
				if a.String() != b.String() {
					t.Errorf("the merged file differs from the whole run's:\n%s\n%s", b.String()[:min(b.Len(), 600)], a.String()[:min(a.Len(), 600)])
				}
			}
			if _, _, _, err := MergeReplay(parts[:3], names[:3]); err == nil || !strings.Contains(err.Error(), "shard 1/4 is missing") {
				t.Errorf("three of four shards: %v", err)
			}
			if _, _, _, err := MergeReplay(append(parts[:3:3], parts[2]), names); err == nil || !strings.Contains(err.Error(), "is also in") {
				t.Errorf("a shard twice: %v", err)
			}
		})
	}
	if _, err := ShardKey("", []scenario.LimitSpec{{Name: "u", Key: "user"}, {Name: "i", Key: "ip"}}); err == nil || !strings.Contains(err.Error(), "none of which determines") {
		t.Errorf("user and ip layers: %v", err)
	}
	if k, err := ShardKey("", prefixes); err != nil || k != "ipv6/64" {
		t.Errorf("ip and ipv6/64 layers shard by %q (%v), want ipv6/64", k, err)
	}
}
