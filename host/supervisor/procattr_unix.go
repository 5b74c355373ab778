//go:build unix && !linux

package supervisor

import (
	"os/exec"
	"syscall"
)

// setProcAttr launches the plugin in a process group of its own, as on
// Linux (see procattr_linux.go). There is no Pdeathsig here: a host killed
// with SIGKILL leaves its plugins running until their next write fails or
// a signal finds the host gone.
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
