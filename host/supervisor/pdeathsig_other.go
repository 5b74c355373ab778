//go:build !linux

package supervisor

import "os/exec"

// setPdeathsig does nothing outside Linux: there, a host killed with
// SIGKILL leaves its plugins running until their next write fails.
func setPdeathsig(*exec.Cmd) {}
