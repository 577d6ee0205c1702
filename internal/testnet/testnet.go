// Package testnet gives tests loopback sockets that hold up on a busy machine, where other
// processes hold most of the ephemeral ports (scripts/holdsockets shows the suite passing
// with 20000 of them taken): a listener that waits for a port to come free instead of
// failing on the first EADDRINUSE, and a refused address that no one else can take.
package testnet

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// patience is how long Listen waits for a free port before it fails the test.
const patience = 20 * time.Second

// Listen listens on 127.0.0.1 on a port the system picks, trying again while none is
// free (EADDRINUSE, EADDRNOTAVAIL: every ephemeral port taken for the moment), and closes
// the listener when the test ends.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// listen is Listen without a test: for a helper that hands the listener on.
func listen() (net.Listener, error) {
	deadline := time.Now().Add(patience)
	for wait := time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil || !Busy(err) || time.Now().After(deadline) {
			return ln, err
		}
		time.Sleep(wait)
	}
}

// Busy reports whether err says the system had no port to give for the moment.
func Busy(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EADDRNOTAVAIL)
}

// RefusedAddr is a loopback address that refuses connections for the whole test: a
// socket bound to it and never listening holds the port, so no other process can start
// listening there meanwhile (a listener closed to make a refused address leaves its port
// to whoever asks next).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
		if err == nil {
			sa, err := syscall.Getsockname(fd)
			if err != nil {
				syscall.Close(fd)
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fd) })
			return (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()
		}
		syscall.Close(fd)
		if !Busy(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Miniredis starts an embedded miniredis on a loopback port as miniredis.RunT does, waiting
// for a free port as Listen does, and stops it when the test ends.
func Miniredis(t testing.TB) *miniredis.Miniredis {
	t.Helper()
	m := miniredis.NewMiniRedis()
	deadline := time.Now().Add(patience)
	for wait := time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := m.StartAddr("127.0.0.1:0")
		if err == nil {
			break
		}
		if !Busy(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(wait)
	}
	t.Cleanup(m.Close)
	return m
}

// HTTPServer starts an httptest server of h on a Listen listener (httptest's own panics
// when no port is free), closed when the test ends.
func HTTPServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := &httptest.Server{Listener: Listen(t), Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}
