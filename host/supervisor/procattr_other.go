//go:build !unix

package supervisor

import "os/exec"

// setProcAttr does nothing outside Unix: there are no process groups to
// leave and no Pdeathsig.
func setProcAttr(*exec.Cmd) {}
