package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The process helpers on a child that sleeps: it is found among the test's
// children, a SIGTERM is delivered (and ends it), and it is gone; a
// process that never existed is not alive.
func TestProcessHelpers(t *testing.T) {
	RequireProc(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep on PATH")
	}
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	pid := cmd.Process.Pid

	if got := ChildNamed(t, os.Getpid(), "sleep"); got != pid {
		t.Errorf("ChildNamed(sleep) = %d, want %d", got, pid)
	}
	if got, want := ChildExecutables(os.Getpid())[pid], realPath(t, sleep); got != want {
		t.Errorf("ChildExecutables()[%d] = %q, want %q", pid, got, want)
	}
	if !Alive(pid) {
		t.Errorf("Alive(%d) = false for a running child", pid)
	}
	if err := SignalDelivered(pid, syscall.SIGTERM, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil {
		t.Error("sleep exited cleanly after SIGTERM, want killed")
	}
	WaitGone(t, 5*time.Second, pid)
	if _, ok := Children(os.Getpid())[pid]; ok {
		t.Errorf("Children still lists %d after it exited", pid)
	}
	if Alive(1 << 30) {
		t.Error("Alive(1<<30) = true")
	}
}

// realPath is path with its symbolic links resolved, as /proc reports an
// executable.
func realPath(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
