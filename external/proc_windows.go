package external

import (
	"os"
	"syscall"
)

// childAttr is nothing on Windows, which has no process groups to kill at once.
func childAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the child alone: on Windows what it started may outlive it.
func killGroup(p *os.Process) { p.Kill() }
