// Command genlog writes a synthetic combined-format access log for measuring replay
// (internal/loggen): the same seed gives the same bytes, so logs of millions of lines
// need not be kept.
//
//	go run ./scripts/genlog -lines 2000000 > access.log
//	go run ./scripts/genlog -lines 20000000 | gzip > access.log.gz
//
// With -count FILE it writes nothing and counts FILE's lines instead, as a bare Go line
// reader does (bufio, one slice per line, nothing parsed): the floor that
// scripts/bench.sh measures replay against.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rlsim/rlsim/internal/loggen"
)

func main() {
	var o loggen.Options
	flag.IntVar(&o.Lines, "lines", 2_000_000, "lines to write")
	flag.IntVar(&o.Addrs, "addrs", 1<<18, "client addresses")
	flag.Float64Var(&o.Rate, "rate", 300, "requests per second")
	flag.Uint64Var(&o.Seed, "seed", 1, "the seed: the same seed writes the same log")
	count := flag.String("count", "", "count the lines of this file instead, as a bare line reader")
	flag.Parse()
	if *count != "" {
		n, err := countLines(*count)
		if err != nil {
			fmt.Fprintln(os.Stderr, "genlog:", err)
			os.Exit(1)
		}
		fmt.Println(n)
		return
	}
	if err := loggen.Write(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "genlog:", err)
		os.Exit(1)
	}
}

// countLines reads path line by line and counts the lines.
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			n++
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return n, err
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			n-- // the same line goes on
		}
	}
}
