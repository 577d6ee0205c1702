package traffic

import (
	"strings"
	"testing"
	"time"
)

func TestReadCombinedMapsFieldsToIdentities(t *testing.T) {
	log := `203.0.113.7 - alice [01/Jan/2026:10:00:59.900 +0000] "GET /api/list?p=2 HTTP/1.1" 200 512 "-" "curl/8.5" "198.51.100.4, 10.0.0.1"
2001:db8::5 - - [01/Jan/2026:10:00:58 +0100] "POST /login HTTP/2.0" 401 - "https://x/" "Mozilla/5.0 (X11; \"quoted\")"
`
	l, err := ReadLog(strings.NewReader(log), "combined")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 2 || l.Bad != 0 {
		t.Fatalf("%d entries, %d bad: %+v", len(l.Entries), l.Bad, l.Problems)
	}
	// Sorted by time: the +0100 line is an hour earlier.
	first, second := l.Entries[0], l.Entries[1]
	if first.Line != 2 || first.Request.ClientIP.String() != "2001:db8::5" || first.Request.User != "" || first.Request.Route != "POST /login" {
		t.Errorf("first entry %+v", first)
	}
	r := second.Request
	if r.User != "alice" || r.Account != "alice" || r.Route != "GET /api/list" || r.XFFSent != "198.51.100.4, 10.0.0.1" || r.Cost != 1 {
		t.Errorf("second entry %+v", r)
	}
	if want := time.Date(2026, 1, 1, 10, 0, 59, 900e6, time.UTC); !second.Time.Equal(want) {
		t.Errorf("time %s, want %s", second.Time, want)
	}
}

func TestReadLogNamesEveryBadLine(t *testing.T) {
	good := `203.0.113.7 - - [01/Jan/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1`
	lines := []string{
		good,
		`example.com - - [01/Jan/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1`,
		good,
		`203.0.113.7 - - [yesterday] "GET / HTTP/1.1" 200 1`,
		good,
		`203.0.113.7 - - [01/Jan/2026:10:00:00 +0000] "GET / HTTP/1.1 200 1`,
		good, good,
		`203.0.113.7 - - [01/Jan/2026:10:00:00 +0000] "GET / HTTP/1.1" OK 1`,
	}
	l, err := ReadLog(strings.NewReader(strings.Join(lines, "\n")), "combined")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`line 2: remote address "example.com" is not an IP address`,
		`line 4: time "yesterday": want 01/Jan/2026:10:00:59 +0000`,
		`line 6: unclosed quote`,
		`line 9: status "OK" is not a number`,
	}
	if l.Bad != 4 || len(l.Problems) != 4 {
		t.Fatalf("bad %d, problems %v", l.Bad, l.Problems)
	}
	for i, p := range l.Problems {
		if p.String() != want[i] {
			t.Errorf("problem %d: %s, want %s", i, p, want[i])
		}
	}
}

func TestReadLogJSONLinesAndCSVErrors(t *testing.T) {
	jsonl := `{"time": "2026-01-01T10:00:00Z", "ip": "1.2.3.4"}
{"time": 1767261600.25, "user": "u", "cost": 3}
{"time": "2026-01-01T10:00:01Z", "colour": "red"}
{"ip": "1.2.3.4"}
{"time": "2026-01-01T10:00:02Z", "ip": "1.2.3.4.5"}
{"time": "2026-01-01T10:00:03Z", "cost": 0}
{"time": "2026-01-01T10:00:04Z", "label": "villain"}
{"time": "2026-01-01T10:00:05Z", "method": "GET", "path": "/a?b=1"}
{"time": "2026-01-01T10:00:06Z"}
{"time": "2026-01-01T10:00:07Z"}
{"time": "2026-01-01T10:00:08Z"}
`
	l, err := ReadLog(strings.NewReader(jsonl), "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 6 || l.Bad != 5 {
		t.Fatalf("%d entries, %d bad: %v", len(l.Entries), l.Bad, l.Problems)
	}
	for i, line := range []int{3, 4, 5, 6, 7} {
		if l.Problems[i].Line != line {
			t.Errorf("problem %d on line %d, want %d (%s)", i, l.Problems[i].Line, line, l.Problems[i])
		}
	}
	if l.Entries[2].Request.Route != "GET /a" || l.Entries[1].Request.Cost != 3 {
		t.Errorf("entries %+v", l.Entries)
	}

	if _, err := ReadLog(strings.NewReader("when,ip\n"), "csv"); err == nil || !strings.Contains(err.Error(), `unknown column "when"`) {
		t.Errorf("unknown CSV column: %v", err)
	}
	l, err = ReadLog(strings.NewReader("time,ip,user\n2026-01-01T10:00:00Z,1.2.3.4,a\n2026-01-01T10:00:01Z,1.2.3.4\n2026-01-01T10:00:02Z,1.2.3.4,b\n"), "csv")
	if err != nil || l.Bad != 1 || l.Problems[0].Line != 3 || len(l.Entries) != 2 {
		t.Errorf("CSV: %v %+v", err, l)
	}
	if _, err := ReadLog(strings.NewReader("\n\n"), "jsonl"); err == nil {
		t.Error("an empty log was accepted")
	}
}

func FuzzReadCombined(f *testing.F) {
	f.Add(`203.0.113.7 - alice [01/Jan/2026:10:00:59.900 +0000] "GET /a?b HTTP/1.1" 200 512 "-" "ua" "1.2.3.4"` + "\nx\n")
	f.Add(`::1 - - [01/Jan/2026:10:00:59 +0000] "\"" 200 - "" ""`)
	f.Add("[\n\"\n")
	f.Fuzz(func(t *testing.T, data string) { checkLog(t, data, "combined") })
}

func FuzzReadJSONL(f *testing.F) {
	f.Add(`{"time": "2026-01-01T10:00:00Z", "ip": "1.2.3.4", "cost": 2}` + "\n{}\n")
	f.Add(`{"time": 1e300}`)
	f.Add(`{"time": -1}`)
	f.Fuzz(func(t *testing.T, data string) { checkLog(t, data, "jsonl") })
}

func FuzzReadCSV(f *testing.F) {
	f.Add("time,ip,xff,cost\n2026-01-01T10:00:00Z,1.2.3.4,\"5.6.7.8, 1.1.1.1\",3\n")
	f.Add("time\n\"\n")
	f.Fuzz(func(t *testing.T, data string) { checkLog(t, data, "csv") })
}

// checkLog reads data and checks the accounting: every data line is either an entry or a
// named problem, and nothing the reader keeps is unusable.
func checkLog(t *testing.T, data, format string) {
	l, err := ReadLog(strings.NewReader(data), format)
	if err != nil {
		if err.Error() == "" {
			t.Fatal("an error with no reason")
		}
		return
	}
	if len(l.Entries)+l.Bad != l.Lines {
		t.Fatalf("%d entries + %d bad != %d lines", len(l.Entries), l.Bad, l.Lines)
	}
	if l.Bad > len(l.Entries) || len(l.Entries) == 0 {
		t.Fatalf("accepted a log of %d good and %d bad lines", len(l.Entries), l.Bad)
	}
	for _, e := range l.Entries {
		if e.Request.Cost < 1 || e.Line < 1 {
			t.Fatalf("entry %+v", e)
		}
	}
	for _, p := range l.Problems {
		if p.Line < 1 || p.Reason == "" {
			t.Fatalf("problem %+v", p)
		}
	}
}

// A blank line and a time the virtual clock cannot place are unread lines like any other:
// counted, named by line number, never dropped in silence.
func TestReadLogCountsBlankLinesAndTimesOutOfRange(t *testing.T) {
	jsonl := `{"time": "2026-01-01T10:00:00Z", "ip": "1.2.3.4"}

{"time": "1677-06-01T00:00:00Z", "ip": "1.2.3.4"}
{"time": "2026-01-01T10:00:01Z", "ip": "1.2.3.4"}
{"time": "2262-06-01T00:00:00Z", "ip": "1.2.3.4"}
{"time": "2026-01-01T10:00:02Z", "ip": "1.2.3.4"}
{"time": "2026-01-01T10:00:03Z", "ip": "1.2.3.4"}
   
{"time": "2261-12-31T23:59:59Z", "ip": "1.2.3.4"}
`
	l, err := ReadLog(strings.NewReader(jsonl), "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"line 2: blank line",
		"line 3: 1677-06-01T00:00:00Z is outside the years the virtual clock counts (1678 to 2261: int64 nanoseconds of Unix time)",
		"line 5: 2262-06-01T00:00:00Z is outside the years the virtual clock counts (1678 to 2261: int64 nanoseconds of Unix time)",
		"line 8: blank line",
	}
	if l.Lines != 9 || l.Bad != len(want) || len(l.Entries) != 5 {
		t.Fatalf("%d lines, %d bad, %d entries: %v", l.Lines, l.Bad, len(l.Entries), l.Problems)
	}
	for i, p := range l.Problems {
		if p.String() != want[i] {
			t.Errorf("problem %d: %s, want %s", i, p, want[i])
		}
	}
}
