//go:build !linux

package main

import "os/exec"

// setPdeathsig does nothing outside Linux; the harness stops its hosts
// itself (and reads /proc, so it is meant for Linux anyway).
func setPdeathsig(*exec.Cmd) {}

// fsType is not known outside Linux.
func fsType(string) string { return "unknown" }
