package supervisor

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel kill the plugin when the host dies, even
// by SIGKILL, so plugins are never orphaned. (Linux ties this to the
// thread that started the child; the Go runtime does not end its threads
// while the process lives, which is what makes it hold.)
func setPdeathsig(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
