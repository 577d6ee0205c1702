package run

import (
	"bytes"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/internal/loggen"
	"github.com/rlsim/rlsim/traffic"
)

// BenchmarkReplay replays a generated combined log of 200k lines from 26k addresses (the
// measured log's shape at a tenth of its size) through the six algorithms, keyed on the
// address, and reports nanoseconds per line. BenchmarkReplayRead reads the same log with
// the parser alone, and BenchmarkReplayLines splits it into lines alone, the floor any
// reader stands on.
func BenchmarkReplay(b *testing.B) {
	log := benchLog(b)
	combined, _ := traffic.LookupLogFormat("combined")
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		_, err := Replay(ReplaySpec{File: "bench.log", Input: bytes.NewReader(log), Format: combined, Key: "ip",
			Policy: algorithms.Policy{Limit: 100, Window: time.Minute}, TimeScale: 1, Reorder: 10 * time.Second}, Options{})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchLines, "ns/line")
}

func BenchmarkReplayRead(b *testing.B) {
	log := benchLog(b)
	combined, _ := traffic.LookupLogFormat("combined")
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		lr, err := traffic.OpenLog(bytes.NewReader(log), traffic.LogReaderOptions{Format: combined, Config: traffic.LogConfig{Want: traffic.WantIP}, Reorder: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		var l traffic.LogLine
		for lr.Next(&l) {
		}
		lr.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchLines, "ns/line")
}

const benchLines = 200_000

var benchLogData []byte

func benchLog(b *testing.B) []byte {
	b.Helper()
	if benchLogData == nil {
		var buf bytes.Buffer
		if err := loggen.Write(&buf, loggen.Options{Lines: benchLines, Addrs: 1 << 18 / 10, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		benchLogData = buf.Bytes()
	}
	return benchLogData
}
