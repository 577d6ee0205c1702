package external

import (
	"os"
	"syscall"
)

// childAttr puts a child in its own process group, so Close can kill whatever it
// started, and has the kernel kill it should rlsim die without closing it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the child's process group: the child and whatever it started.
func killGroup(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGKILL) }
