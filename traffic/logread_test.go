package traffic

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// readAll reads every line of data as format with the options, and the stats.
func readAll(t testing.TB, data []byte, o LogReaderOptions) ([]LogLine, LogStats, error) {
	t.Helper()
	lr, err := OpenLog(bytes.NewReader(data), o)
	if err != nil {
		return nil, LogStats{}, err
	}
	defer lr.Close()
	var out []LogLine
	var l LogLine
	for lr.Next(&l) {
		out = append(out, l)
	}
	return out, lr.Stats(), lr.Err()
}

func combinedAt(ip string, ts string) string {
	return fmt.Sprintf(`%s - - [%s +0000] "GET / HTTP/1.1" 200 1`, ip, ts)
}

func jsonlFormat() LogFormat { f, _ := LookupLogFormat("jsonl"); return f }

func combinedFormat() LogFormat { f, _ := LookupLogFormat("combined"); return f }

// Lines out of order by up to the reorder window come out in arrival order (ties in line
// order); a line further back is counted as late and named with the line it is behind.
func TestLogReaderPutsLinesInTheirPlaceWithinTheWindow(t *testing.T) {
	lines := []string{
		`{"time": "2026-01-01T10:00:05Z", "ip": "1.1.1.1"}`,
		`{"time": "2026-01-01T10:00:03Z", "ip": "1.1.1.2"}`, // 2 s back: in the window
		`{"time": "2026-01-01T10:00:05Z", "ip": "1.1.1.3"}`,
		`{"time": "2026-01-01T10:00:09Z", "ip": "1.1.1.4"}`,
		`{"time": "2026-01-01T10:00:05.5Z", "ip": "1.1.1.5"}`, // 3.5 s back: late
		`{"time": "2026-01-01T10:00:06Z", "ip": "1.1.1.6"}`,   // 3 s back: just in
	}
	got, st, err := readAll(t, []byte(strings.Join(lines, "\n")), LogReaderOptions{Format: jsonlFormat(), Config: LogConfig{Want: WantAll}, Reorder: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	for _, l := range got {
		order = append(order, l.Line)
	}
	if !reflect.DeepEqual(order, []int{2, 1, 3, 6, 4}) {
		t.Errorf("lines came out as %v, want [2 1 3 6 4]", order)
	}
	if st.Lines != 6 || st.Used != 5 || st.Late != 1 || st.Unreadable != 0 || len(st.Problems) != 1 {
		t.Fatalf("stats %+v", st)
	}
	if p := st.Problems[0]; p.Line != 5 || !p.Late || !strings.Contains(p.Reason, "3.5s before line 4's") || !strings.Contains(p.Reason, "reorder window (3s)") {
		t.Errorf("problem %+v", p)
	}
	if st.First != utc("2026-01-01T10:00:03Z") || st.FirstLine != 2 || st.Last != utc("2026-01-01T10:00:09Z") || st.LastLine != 4 {
		t.Errorf("span %+v", st)
	}
	// Strict: the late line is the error, with its line.
	_, _, err = readAll(t, []byte(strings.Join(lines, "\n")), LogReaderOptions{Format: jsonlFormat(), Config: LogConfig{Want: WantAll}, Reorder: 3 * time.Second, Strict: true})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 5 {
		t.Errorf("strict: %v", err)
	}
}

// manyLines is a combined log of n lines over a few minutes, lines a little out of order
// and a broken line every 997, more than several chunks long.
func manyLines(n int) []byte {
	var b bytes.Buffer
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		at := base.Add(time.Duration(i) * 37 * time.Millisecond)
		if i%13 == 5 {
			at = at.Add(-1500 * time.Millisecond)
		}
		if i%997 == 996 {
			b.WriteString("not a line\r\n")
			continue
		}
		fmt.Fprintf(&b, "203.0.%d.%d - u%d [%s] \"GET /p/%d HTTP/1.1\" 200 %d \"-\" \"ua\"\n", i%7, i%251, i%11, at.Format("02/Jan/2006:15:04:05.000 -0700"), i%5, i)
	}
	return b.Bytes()
}

// The lines and stats are the same on any number of workers, from a plain or a gzipped
// input, whatever the chunking.
func TestLogReaderIsTheSameOnAnyNumberOfWorkersAndGzipped(t *testing.T) {
	data := manyLines(30000)
	if len(data) < 3*chunkBytes {
		t.Fatalf("the log is %d bytes, fewer than three chunks", len(data))
	}
	o := LogReaderOptions{Format: combinedFormat(), Config: LogConfig{Want: WantAll}, Reorder: 2 * time.Second}
	want, wantStats, err := readAll(t, data, o)
	if err != nil {
		t.Fatal(err)
	}
	if wantStats.Unreadable != 30 || wantStats.Used != 30000-30 || len(want) != wantStats.Used {
		t.Fatalf("stats %+v", wantStats)
	}
	for i := 1; i < len(want); i++ {
		if want[i].Time < want[i-1].Time {
			t.Fatalf("line %d at %d comes after line %d at %d", want[i].Line, want[i].Time, want[i-1].Line, want[i-1].Time)
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	for _, tt := range []struct {
		name    string
		data    []byte
		workers int
	}{{"1 worker", data, 1}, {"3 workers", data, 3}, {"gzip, 2 workers", gz.Bytes(), 2}} {
		o.Workers = tt.workers
		got, st, err := readAll(t, tt.data, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(st, wantStats) {
			t.Errorf("%s: %d lines and %+v, want %d and %+v", tt.name, len(got), st, len(want), wantStats)
		}
	}
}

// The uniform placement moves each whole-second line inside its second, the same way for
// the same seed on any number of workers and another way for another seed; lines with a
// fraction stay where they are.
func TestUniformPlacementIsSeededAndStaysInItsSecond(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "%s\n", combinedAt("203.0.113.1", fmt.Sprintf("01/Jan/2026:10:00:%02d", i/100)))
	}
	b.WriteString(combinedAt("203.0.113.1", "01/Jan/2026:10:00:30.250") + "\n")
	read := func(seed uint64, workers int) []LogLine {
		got, st, err := readAll(t, []byte(b.String()), LogReaderOptions{Format: combinedFormat(), Placement: "uniform", Seed: seed, Workers: workers, Reorder: time.Second})
		if err != nil || st.Used != 2001 || st.Whole != 2000 {
			t.Fatalf("%v %+v", err, st)
		}
		return got
	}
	one, again, other := read(1, 1), read(1, 4), read(2, 2)
	if !reflect.DeepEqual(one, again) {
		t.Error("the same seed placed the lines differently on 4 workers")
	}
	if reflect.DeepEqual(one, other) {
		t.Error("another seed placed every line the same way")
	}
	second := utc("2026-01-01T10:00:00Z")
	var sub [10]int
	for _, l := range one {
		if l.Whole {
			s := second + int64(l.Line-1)/100*int64(time.Second)
			if l.Time < s || l.Time >= s+int64(time.Second) {
				t.Fatalf("line %d placed at %d, outside its second", l.Line, l.Time)
			}
			sub[(l.Time-s)/int64(100*time.Millisecond)]++
		} else if l.Time != utc("2026-01-01T10:00:30.25Z") {
			t.Errorf("the line with a fraction moved to %d", l.Time)
		}
	}
	for i, n := range sub {
		if n < 140 || n > 260 { // 200 expected in each tenth of a second
			t.Errorf("tenth %d of the seconds holds %d of 2000", i, n)
		}
	}
}

// Keep chooses the lines returned; the others are read, counted and still set the span
// and the order, so that every shard sees the same log.
func TestLogReaderKeepsWhatKeepChooses(t *testing.T) {
	data := manyLines(3000)
	o := LogReaderOptions{Format: combinedFormat(), Config: LogConfig{Want: WantAll}, Reorder: 2 * time.Second}
	all, allStats, _ := readAll(t, data, o)
	o.Keep = func(r *Request) bool { return r.User == "u3" }
	some, st, err := readAll(t, data, o)
	if err != nil {
		t.Fatal(err)
	}
	var want []LogLine
	for _, l := range all {
		if l.Request.User == "u3" {
			want = append(want, l)
		}
	}
	if !reflect.DeepEqual(some, want) || st.OtherShard != len(all)-len(want) || st.First != allStats.First || st.Last != allStats.Last || st.Late != allStats.Late {
		t.Errorf("kept %d of %d (want %d), stats %+v against %+v", len(some), len(all), len(want), st, allStats)
	}
}

// A line longer than the limit ends the read with an error naming it; an input that
// fails is an error; an empty log is no line at all.
func TestLogReaderInputErrors(t *testing.T) {
	long := append([]byte(combinedAt("1.2.3.4", "01/Jan/2026:10:00:00")+"\n"), bytes.Repeat([]byte("x"), maxLogLine+10)...)
	if _, _, err := readAll(t, long, LogReaderOptions{Format: combinedFormat()}); err == nil || !strings.Contains(err.Error(), "line 2: longer than") {
		t.Errorf("a long line: %v", err)
	}
	lr, err := OpenLog(io.MultiReader(strings.NewReader(combinedAt("1.2.3.4", "01/Jan/2026:10:00:00")+"\n"), failingReader{}), LogReaderOptions{Format: combinedFormat()})
	if err != nil {
		t.Fatal(err)
	}
	var l LogLine
	for lr.Next(&l) {
	}
	if err := lr.Err(); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("a failing input: %v", err)
	}
	got, st, err := readAll(t, nil, LogReaderOptions{Format: combinedFormat()})
	if err != nil || len(got) != 0 || st.Lines != 0 {
		t.Errorf("an empty log: %v %v %+v", err, got, st)
	}
	if _, _, err := readAll(t, []byte("when,ip\n"), LogReaderOptions{Format: func() LogFormat { f, _ := LookupLogFormat("csv"); return f }()}); err == nil || !strings.Contains(err.Error(), "line 1: CSV header") {
		t.Errorf("a bad CSV header: %v", err)
	}
	if _, err := OpenLog(strings.NewReader(""), LogReaderOptions{Format: combinedFormat(), Placement: "middle"}); err == nil {
		t.Error("an unknown placement was accepted")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// checkLogReader reads data as format on one and on three workers and checks the
// accounting: every line read is returned or skipped for a reason, the lines come out in
// arrival order, and the two reads agree.
func checkLogReader(t *testing.T, data []byte, f LogFormat, c LogConfig) {
	o := LogReaderOptions{Format: f, Config: c, Reorder: time.Second, Placement: "uniform", Seed: 3}
	o.Workers = 1
	one, st, err := readAll(t, data, o)
	if err != nil {
		if err.Error() == "" {
			t.Fatal("an error with no reason")
		}
		return
	}
	if st.Used+st.Unreadable+st.Late != st.Lines || st.Used != len(one) {
		t.Fatalf("%d used + %d unreadable + %d late != %d lines (%d returned)", st.Used, st.Unreadable, st.Late, st.Lines, len(one))
	}
	for i, l := range one {
		if l.Request.Cost < 1 || l.Line < 1 || i > 0 && before(&l, &one[i-1]) {
			t.Fatalf("line %+v out of place or costless", l)
		}
	}
	for _, p := range st.Problems {
		if p.Line < 1 || p.Reason == "" {
			t.Fatalf("problem %+v", p)
		}
	}
	o.Workers = 3
	three, st3, err := readAll(t, data, o)
	if err != nil || !reflect.DeepEqual(one, three) || !reflect.DeepEqual(st, st3) {
		t.Fatalf("three workers read it otherwise: %v", err)
	}
}

// The reorder buffer gives its lines back earliest first (ties in line order), as a
// sorted list does, whether they sit on its runs or, past maxRuns runs, on its heap:
// lines of 3 and of 40 interleaved sources, each in order, some with jitter, with pops
// between the pushes.
func TestReorderBufferPopsInArrivalOrder(t *testing.T) {
	for _, sources := range []int{1, 3, 40} {
		var b reorderBuffer
		var model []LogLine
		rng := uint64(sources)
		next := func(n int) int {
			rng = rng*6364136223846793005 + 1442695040888963407
			return int(rng>>33) % n
		}
		clock := make([]int64, sources)
		sawHeap, sawRuns := false, false
		for line := 1; line <= 5000; line++ {
			s := next(sources)
			clock[s] += int64(next(3)) // ties are common: whole seconds
			at := clock[s]
			if sources == 40 && next(10) == 0 {
				at -= int64(next(5)) // a line a little out of order within its source
			}
			b.push(&LogLine{Time: at, Line: line})
			model = append(model, LogLine{Time: at, Line: line})
			sawHeap = sawHeap || len(b.late) > 0
			sawRuns = sawRuns || b.n > 1
			for next(3) == 0 && len(model) > 0 || len(model) > 200 {
				got := b.pop()
				best := 0
				for i := range model {
					if before(&model[i], &model[best]) {
						best = i
					}
				}
				if got.Line != model[best].Line || got.Time != model[best].Time {
					t.Fatalf("%d sources: popped line %d at %d, want line %d at %d", sources, got.Line, got.Time, model[best].Line, model[best].Time)
				}
				model = append(model[:best], model[best+1:]...)
				b.release() // as NextLine does before it takes more lines
				if b.Len() != len(model) {
					t.Fatalf("%d sources: %d lines held, want %d", sources, b.Len(), len(model))
				}
			}
		}
		if want := sources == 40; sawHeap != want || !sawRuns {
			t.Errorf("%d sources: used the heap %v (want %v), several lines on runs %v", sources, sawHeap, want, sawRuns)
		}
	}
}
