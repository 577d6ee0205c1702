package traffic

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// LogEntry is one access-log line read into a request. Time is the line's own wall-clock
// time; Request.At is left zero for the caller to place on the run's timeline.
type LogEntry struct {
	Time    time.Time
	Line    int
	Request Request
}

// AccessLog is what ReadLog found: the entries in time order (ties keep file order), how
// many lines it read (blank ones too; a CSV header not), and every line it could not read
// (Bad counts them all, Problems keeps the first MaxLogProblems).
type AccessLog struct {
	Entries  []LogEntry
	Lines    int
	Bad      int
	Problems []LogProblem
}

// ReadLog reads a whole access log in format, every identity of every line, with no
// bound on how far out of order a line may be: what a test or a small log wants. A run
// reads a log with OpenLog, a line at a time. The result is an error only when the input
// cannot be read at all, or holds no readable line, or more unreadable lines than
// readable ones.
func ReadLog(r io.Reader, format string) (*AccessLog, error) {
	f, err := LookupLogFormat(format)
	if err != nil {
		return nil, err
	}
	lr, err := OpenLog(r, LogReaderOptions{Format: f, Config: LogConfig{Want: WantAll}, Reorder: unboundedReorder})
	if err != nil {
		return nil, err
	}
	defer lr.Close()
	out := &AccessLog{}
	var l LogLine
	for lr.Next(&l) {
		out.Entries = append(out.Entries, LogEntry{Time: time.Unix(0, l.Time).UTC(), Line: l.Line, Request: l.Request})
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	st := lr.Stats()
	out.Lines, out.Bad, out.Problems = st.Lines, st.Unreadable, st.Problems
	if err := CheckUnread(st, format); err != nil {
		return nil, err
	}
	return out, nil
}

// unboundedReorder is a reorder window no log's span reaches.
const unboundedReorder = time.Duration(math.MaxInt64)

// CheckUnread is the error of a log read to its end with no readable line, or more
// unreadable lines than readable ones (is it the right format?); nil otherwise.
func CheckUnread(st LogStats, format string) error {
	read := st.Lines - st.Unreadable
	if read == 0 {
		if st.Unreadable > 0 {
			return fmt.Errorf("none of the %d lines could be read as %s (first: %s)", st.Unreadable, format, st.Problems[0])
		}
		return errors.New("the log holds no requests")
	}
	if st.Unreadable > read {
		return fmt.Errorf("%d of %d lines could not be read as %s (first: %s); is this the right --log-format?", st.Unreadable, st.Lines, format, firstUnread(st))
	}
	return nil
}

func firstUnread(st LogStats) LogProblem {
	for _, p := range st.Problems {
		if !p.Late {
			return p
		}
	}
	return st.Problems[0]
}
