package main

import (
	"fmt"
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel kill a host when the harness dies, so that
// an interrupted bench leaves no process behind.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// fsType names the file system holding path. The hosts' stores sync every
// write, so whether it is a disk or tmpfs changes the asleep path's numbers
// several times over; the header says which it was.
func fsType(path string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return "unknown"
	}
	switch magic := uint64(st.Type); magic {
	case 0xEF53:
		return "ext2/3/4"
	case 0x01021994:
		return "tmpfs"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794C7630:
		return "overlayfs"
	case 0x2FC12FC1:
		return "zfs"
	default:
		return fmt.Sprintf("fs 0x%X", magic)
	}
}
