//go:build unix

package command

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// inGroup starts cmd in a process group of its own and makes the
// context's end kill the whole group with SIGKILL, so that a hung docker,
// a shell pipeline or anything a command started in the foreground goes
// with it. (A process that leaves the group, setsid or a daemon's double
// fork, is beyond it: that is how a start command leaves a server
// running.)
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Not yet reaped, the leader's pid is still its group's id; once
		// Wait has reaped it, the command is done and the group (a server
		// it started in the background among it) is left alone.
		if err := cmd.Process.Signal(syscall.Signal(0)); errors.Is(err, os.ErrProcessDone) {
			return os.ErrProcessDone
		}
		return killGroup(cmd)
	}
}

// killGroup sends SIGKILL to cmd's process group.
func killGroup(cmd *exec.Cmd) error {
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
