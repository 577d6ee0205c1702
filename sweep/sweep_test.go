package sweep

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
)

func TestParseParam(t *testing.T) {
	tests := []struct {
		in      string
		want    Param
		wantErr string
	}{
		{in: "policy.window=1s,10s,1m", want: Param{"policy.window", []string{"1s", "10s", "1m"}}},
		{in: "policy.burst=10, 20 ,50", want: Param{"policy.burst", []string{"10", "20", "50"}}},
		{in: "seed=0,7", want: Param{"seed", []string{"0", "7"}}},
		{in: "duration=90s", want: Param{"duration", []string{"90s"}}},
		{in: "policy.limit=100", want: Param{"policy.limit", []string{"100"}}},
		{in: "policy.colour=red", wantErr: `unknown parameter "policy.colour"`},
		{in: "policy.window", wantErr: "want NAME=VALUE"},
		{in: "=1s", wantErr: "want NAME=VALUE"},
		{in: "policy.window=", wantErr: "want NAME=VALUE"},
		{in: "policy.window=1s,,2s", wantErr: `policy.window: want a positive duration such as 1s, 10s or 1m, got ""`},
		{in: "policy.window=0s", wantErr: "want a positive duration"},
		{in: "policy.window=1m,500000h", wantErr: "policy.window: 500000h0m0s is longer than the longest window the virtual clock handles"},
		{in: "policy.limit=-5", wantErr: `policy.limit: want a whole number of units from 1 to 4503599627370496 (2^52), got "-5"`},
		{in: "policy.burst=4503599627370497", wantErr: `policy.burst: want a whole number of units from 1 to 4503599627370496 (2^52), got "4503599627370497"`},
		{in: "policy.burst=1.5", wantErr: "want a whole number of units from 1 to"},
		{in: "seed=-1", wantErr: `seed: want a whole number, got "-1"`},
		{in: "policy.limit=10,10", wantErr: `policy.limit: value "10" given twice`},
	}
	for _, tt := range tests {
		got, err := ParseParam(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseParam(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseParam(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, good := range []struct {
		in   string
		want Shard
	}{{"1/1", Shard{1, 1}}, {"2/3", Shard{2, 3}}, {"3/3", Shard{3, 3}}} {
		if got, err := ParseShard(good.in); err != nil || got != good.want {
			t.Errorf("ParseShard(%q) = %v, %v", good.in, got, err)
		}
	}
	for _, bad := range []string{"", "3", "0/3", "4/3", "1/0", "a/b", "1/3/5", "-1/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

func TestGridIsRowMajor(t *testing.T) {
	params := []Param{{"policy.limit", []string{"10", "20"}}, {"policy.window", []string{"1s", "2s", "3s"}}}
	if Size(params) != 6 {
		t.Fatalf("Size = %d", Size(params))
	}
	var got []string
	for i := range 6 {
		got = append(got, strings.Join(PointValues(params, i), "/"))
	}
	want := []string{"10/1s", "10/2s", "10/3s", "20/1s", "20/2s", "20/3s"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("points = %v, want %v", got, want)
	}
}

func testSweep(t *testing.T) (*scenario.Scenario, []Param) {
	t.Helper()
	sc, err := scenario.Load("steady-poisson")
	if err != nil {
		t.Fatal(err)
	}
	var params []Param
	for _, s := range []string{"policy.burst=5,60", "policy.window=30s,1m", "duration=5s,10s"} {
		p, err := ParseParam(s)
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, p)
	}
	return sc, params
}

func TestResultsDoNotDependOnWorkers(t *testing.T) {
	sc, params := testSweep(t)
	want, err := Run(sc, params, Options{Workers: 1, Algorithms: []string{"token-bucket", "fixed-window"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Rows) != 8 {
		t.Fatalf("%d rows, want 8", len(want.Rows))
	}
	// The parameters reach the run: burst 5 refuses what burst 60 lets through.
	if want.Rows[0].Results[0].Rejected == 0 || want.Rows[4].Results[0].Rejected != 0 || want.Rows[0].Policy.Burst != 5 {
		t.Fatalf("burst not applied: %+v / %+v", want.Rows[0], want.Rows[4])
	}
	if want.Rows[1].Results[0].Requests <= want.Rows[0].Results[0].Requests {
		t.Fatal("duration not applied")
	}
	for _, workers := range []int{2, 3, 16} {
		got, err := Run(sc, params, Options{Workers: workers, Algorithms: []string{"token-bucket", "fixed-window"}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("workers=%d gives different results", workers)
		}
	}
}

func TestMergeOfShardsEqualsOneRun(t *testing.T) {
	sc, params := testSweep(t)
	whole, err := Run(sc, params, Options{Algorithms: []string{"gcra"}})
	if err != nil {
		t.Fatal(err)
	}
	var parts []*Results
	var names []string
	for _, k := range []int{3, 1, 2} { // any order
		part, err := Run(sc, params, Options{Algorithms: []string{"gcra"}, Shard: &Shard{K: k, N: 3}})
		if err != nil {
			t.Fatal(err)
		}
		// Through the file format, as a shard on another machine would hand it over.
		var buf bytes.Buffer
		if err := report.WriteJSON(&buf, part); err != nil {
			t.Fatal(err)
		}
		back, err := ReadResults(&buf)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, back)
		names = append(names, "shard"+string(rune('0'+k)))
	}
	merged, err := Merge(parts, names)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := report.WriteJSON(&a, whole); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&b, merged); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("merged shards differ from one run:\n%s\nvs\n%s", b.String(), a.String())
	}

	other, _ := Run(sc, params[:1], Options{Algorithms: []string{"gcra"}, Shard: &Shard{K: 3, N: 3}})
	seed := uint64(9)
	reseeded, _ := Run(sc, params, Options{Algorithms: []string{"gcra"}, Shard: &Shard{K: 3, N: 3}, Seed: &seed})
	for _, tt := range []struct {
		parts []*Results
		want  string
	}{
		{parts[:2], "shard 2/3 is missing"},
		{[]*Results{parts[0], parts[1], parts[1]}, "shard 1/3 is also in shard1"},
		{[]*Results{parts[1], parts[2], other}, "is a shard of a different sweep"},
		{[]*Results{parts[1], parts[2], reseeded}, "is a shard of a different sweep"},
		{[]*Results{whole, parts[0]}, "is a whole sweep, not a shard"},
	} {
		_, err := Merge(tt.parts, []string{"shard3", "shard1", "shard2"}[:len(tt.parts)])
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Merge error = %v, want %q", err, tt.want)
		}
	}
}

func TestReadResultsRejectsOtherFiles(t *testing.T) {
	for _, in := range []string{`{"scenario": "x", "results": []}`, `not json`, `{"sweep": {"params": [], "points": 0}, "rows": []}`, `{"sweep":{"params":[{"name":"seed","values":["1"]}],"points":1},"rows":[]} {}`} {
		if _, err := ReadResults(strings.NewReader(in)); err == nil {
			t.Errorf("ReadResults(%q) accepted", in)
		}
	}
}

func FuzzParseParam(f *testing.F) {
	for _, s := range []string{"policy.window=1s,10s,1m", "seed=1", "policy.burst=1,2", "duration=", "x=y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseParam(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if len(p.Values) == 0 {
			t.Fatalf("accepted %q with no values", s)
		}
		var st setting
		for _, v := range p.Values {
			if err := apply(&st, p.Name, v); err != nil {
				t.Fatalf("accepted value %q that does not apply: %v", v, err)
			}
		}
	})
}
