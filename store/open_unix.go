//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package store

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// open reports whether an idle connection is still open: the server has neither closed
// it nor sent anything unasked. It peeks at the socket without waiting, as a pool checks
// a connection before it lends it.
func open(c net.Conn) bool {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true // nothing to peek at: trust it
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read is the one answer of an open, idle connection; a byte (unasked)
		// or none at all (the server closed it) or an error is not.
		alive = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
		return true
	})
	return err == nil && alive
}
