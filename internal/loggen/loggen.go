// Package loggen writes synthetic combined-format access logs for measuring and testing
// replay: the same options give the same bytes, so a log of millions of lines need not be
// kept anywhere.
//
// Requests arrive at Rate per second from Addrs client addresses (100.64.0.0 onwards),
// half of them drawn uniformly and half from a Zipf law (a few addresses send much of the
// traffic, as crawlers and busy NATs do). Four servers write the log, each flushing its
// buffer of 256 lines when full, so lines come a few seconds out of order, as merged logs
// do. Times have whole seconds, as $time_local writes them.
package loggen

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"time"
)

// Options say what log to write.
type Options struct {
	Lines int     // lines to write
	Addrs int     // client addresses (1 << 18 is the measured log's)
	Rate  float64 // requests per second (default 300)
	Seed  uint64  // the same seed writes the same log
}

var paths = []string{"/api/items", "/api/items/%d", "/api/users/%d", "/login", "/static/app.js", "/api/search?q=%d"}

var agents = []string{"curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64)", "okhttp/4.12.0", "python-requests/2.31"}

// Write writes o.Lines lines of the log to out.
func Write(out io.Writer, o Options) error {
	lines, addrs, rate, seed := o.Lines, max(o.Addrs, 1), o.Rate, o.Seed
	if rate <= 0 {
		rate = 300
	}
	w := bufio.NewWriterSize(out, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 0x6c6f67))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(addrs-1))
	base := netip.MustParseAddr("100.64.0.0").As4()
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	const servers, flushAt = 4, 256
	buffers := make([][]byte, servers)
	counts := make([]int, servers)
	at := 0.0
	var stamp string
	var stampSec int64 = -1
	for i := range lines {
		at += rng.ExpFloat64() / rate
		sec := int64(math.Floor(at))
		if sec != stampSec {
			stamp, stampSec = start.Add(time.Duration(sec)*time.Second).Format("02/Jan/2006:15:04:05 -0700"), sec
		}
		k := rng.IntN(addrs)
		if i%2 == 1 {
			k = int(zipf.Uint64())
		}
		a := base
		v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) + uint32(k)
		path := paths[rng.IntN(len(paths))]
		if path[len(path)-1] == 'd' {
			path = fmt.Sprintf(path, rng.IntN(5000))
		}
		s := rng.IntN(servers)
		buffers[s] = fmt.Appendf(buffers[s], "%d.%d.%d.%d - - [%s] \"GET %s HTTP/1.1\" 200 %d \"-\" \"%s\"\n",
			v>>24, v>>16&255, v>>8&255, v&255, stamp, path, 200+rng.IntN(20000), agents[rng.IntN(len(agents))])
		if counts[s]++; counts[s] == flushAt {
			if _, err := w.Write(buffers[s]); err != nil {
				return err
			}
			buffers[s], counts[s] = buffers[s][:0], 0
		}
	}
	for _, b := range buffers {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Flush()
}
