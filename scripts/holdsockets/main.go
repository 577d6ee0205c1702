// Command holdsockets runs a command while this process (and, past its file limit, copies
// of it) holds many loopback sockets, as other programs on a busy machine do, so that a
// test suite can be shown to pass under port pressure:
//
//	go run ./scripts/holdsockets -sockets 20000 -- go test ./...
//
// -mode listeners (the default) holds that many listening sockets on 127.0.0.1, each on a
// port of its own from the ephemeral range, which takes 20000 of its 28232 ports on a
// default Linux; -mode pairs holds connections to one listener instead, two sockets per
// ephemeral port. It is bounded: at most 60000 sockets, the command is killed after -max
// (default 30m), and every socket is closed when the command ends. It prints how many it
// holds, in how many processes, and the command's wall time; it exits with the command's
// status.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const maxSockets = 60000

func main() {
	sockets := flag.Int("sockets", 20000, "loopback sockets to hold (at most 60000)")
	mode := flag.String("mode", "listeners", "listeners: each on an ephemeral port of its own; pairs: connections, two sockets per port")
	limit := flag.Duration("max", 30*time.Minute, "kill the command after this long")
	child := flag.Bool("child", false, "hold -sockets and report on stdout, for the parent (internal)")
	flag.Parse()
	if *sockets < 1 || *sockets > maxSockets || (*mode != "listeners" && *mode != "pairs") {
		fmt.Fprintf(os.Stderr, "holdsockets: -sockets must be 1 to %d and -mode listeners or pairs\n", maxSockets)
		os.Exit(2)
	}
	if *child {
		os.Exit(runChild(*sockets, *mode))
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "holdsockets: give the command to run after --")
		os.Exit(2)
	}
	os.Exit(run(*sockets, *mode, *limit, flag.Args()))
}

// perProcess is how many sockets one process holds: its file limit, raised to the hard
// one, less room for the runtime's own.
func perProcess() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
		return max(int(l.Cur)-100, 1)
	}
	return 1000
}

// run starts the holders, runs the command and returns its status.
func run(sockets int, mode string, limit time.Duration, command []string) int {
	per := perProcess()
	var holders []*exec.Cmd
	var lifelines []io.Closer // a holder lives while its stdin is open: it dies with us
	defer func() {
		for i, h := range holders {
			lifelines[i].Close()
			h.Wait()
		}
	}()
	held, ports := 0, 0
	least := 1 // the fewest sockets a holder holds: a listener, or one with a pair
	if mode == "pairs" {
		least = 3
	}
	for sockets-held >= least {
		n := min(per, sockets-held)
		h := exec.Command(os.Args[0], "-child", "-sockets", strconv.Itoa(n), "-mode", mode)
		h.Stderr = os.Stderr
		out, err := h.StdoutPipe()
		var in io.WriteCloser
		if err == nil {
			in, err = h.StdinPipe()
		}
		if err == nil {
			err = h.Start()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "holdsockets: %v\n", err)
			return 1
		}
		holders, lifelines = append(holders, h), append(lifelines, in)
		line, err := bufio.NewReader(out).ReadString('\n')
		var got, used int
		if _, serr := fmt.Sscanf(line, "held %d %d", &got, &used); err != nil || serr != nil {
			fmt.Fprintf(os.Stderr, "holdsockets: a holder failed: %q %v\n", strings.TrimSpace(line), err)
			return 1
		}
		held, ports = held+got, ports+used
	}
	low, high := portRange()
	fmt.Fprintf(os.Stderr, "holdsockets: holding %d loopback sockets (%s, %d ports of the ephemeral range %d-%d) in %d processes\n",
		held, mode, ports, low, high, len(holders))
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	fmt.Fprintf(os.Stderr, "holdsockets: %s ran %s under %d held sockets: %v\n", command[0], time.Since(start).Round(100*time.Millisecond), held, exitText(err))
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	}
	return 1
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// runChild holds n sockets and says so on stdout, then holds them until its stdin ends.
func runChild(n int, mode string) int {
	perProcess()
	var keep []net.Conn
	var lns []net.Listener
	ports := 0
	switch mode {
	case "listeners":
		for range n {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				fmt.Fprintf(os.Stderr, "holdsockets: after %d listeners: %v\n", len(lns), err)
				return 1
			}
			lns = append(lns, ln)
		}
		ports = n
	case "pairs":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "holdsockets:", err)
			return 1
		}
		lns = append(lns, ln)
		for len(keep)+3 <= n { // the listener and the pairs so far, and one more pair
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				fmt.Fprintf(os.Stderr, "holdsockets: after %d sockets: %v\n", len(keep), err)
				return 1
			}
			s, err := ln.Accept()
			if err != nil {
				fmt.Fprintln(os.Stderr, "holdsockets:", err)
				return 1
			}
			keep = append(keep, c, s)
		}
		ports = len(keep)/2 + 1
		n = len(keep) + 1
	}
	fmt.Printf("held %d %d\n", n, ports)
	io.Copy(io.Discard, os.Stdin) // until the parent closes it, or dies
	return 0
}

// portRange is Linux's ephemeral port range, 0 0 elsewhere.
func portRange() (low, high int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		fmt.Sscanf(string(b), "%d %d", &low, &high)
	}
	return low, high
}
