//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package store

import "net"

// open trusts an idle connection where the socket cannot be peeked at without waiting.
func open(net.Conn) bool { return true }
