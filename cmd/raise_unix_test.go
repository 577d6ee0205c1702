//go:build unix

package cmd

import (
	"syscall"
	"testing"
)

// raise sends sig to this process, as a user's Ctrl-C or kill would.
func raise(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
		t.Fatal(err)
	}
}
