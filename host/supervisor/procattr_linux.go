package supervisor

import (
	"os/exec"
	"syscall"
)

// setProcAttr launches the plugin in a process group of its own, and makes
// the kernel kill it when the host dies.
//
// Setpgid: a signal to the host's process group (Ctrl-C in a terminal,
// kill -TERM -PGID) does not reach the plugin, which must outlive the
// host's graceful shutdown: the host stops it once the in-flight turns are
// done. (A service manager that signals every process of the unit, such as
// systemd's default KillMode=control-group, still reaches it; pluginapi's
// Serve ignores SIGINT and SIGTERM while the host lives for that case.)
//
// Pdeathsig: the kernel sends SIGKILL to the plugin when the host dies,
// even by SIGKILL, so plugins are never orphaned. It is a property of the
// process, not of its group, so the plugin's own group does not change it.
// Linux ties it to the thread that started the child; the Go runtime does
// not end its threads while the process lives, which is what makes it
// hold.
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
