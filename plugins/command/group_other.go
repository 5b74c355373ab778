//go:build !unix

package command

import "os/exec"

// inGroup leaves exec's default outside Unix: the context's end kills the
// command's own process only (there are no process groups to kill).
func inGroup(*exec.Cmd) {}

// killGroup kills cmd's process.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
