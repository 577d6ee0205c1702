//go:build unix && !linux

package external

import (
	"os"
	"syscall"
)

// childAttr puts a child in its own process group, so Close can kill whatever it
// started. (Only Linux can also have the kernel kill it should rlsim die unclosed.)
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the child's process group: the child and whatever it started.
func killGroup(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGKILL) }
