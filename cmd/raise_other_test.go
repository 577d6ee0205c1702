//go:build !unix

package cmd

import (
	"syscall"
	"testing"
)

// raise cannot send a signal to this process here: the tests that need one skip.
func raise(t *testing.T, sig syscall.Signal) {
	t.Skipf("sending %v to this process needs a unix system", sig)
}
