package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process helpers for tests that signal or kill the host's plugins. They
// read Linux's /proc; RequireProc skips a test elsewhere.

// RequireProc skips the test where there is no Linux /proc.
func RequireProc(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("needs Linux /proc: %v", err)
	}
}

// Children are the live child processes of pid (zombies left out), by pid,
// with each one's executable's base name.
func Children(pid int) map[int]string {
	out := ChildExecutables(pid)
	for child, exe := range out {
		out[child] = filepath.Base(exe)
	}
	return out
}

// ChildExecutables are the live child processes of pid (zombies left out),
// by pid, with the path of each one's executable as the kernel reports it:
// the path it was started by, so that two hard links of one binary tell
// their processes apart.
func ChildExecutables(pid int) map[int]string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat") // the pattern is valid
	out := map[int]string{}
	for _, path := range stats {
		child, state, ppid, ok := readStat(path)
		if !ok || ppid != pid || state == "Z" {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", child))
		if err != nil {
			continue // it exited meanwhile
		}
		out[child] = exe
	}
	return out
}

// ChildNamed is the one live child of pid whose executable is name; none,
// or more than one, fails the test.
func ChildNamed(t testing.TB, pid int, name string) int {
	t.Helper()
	var found []int
	children := Children(pid)
	for child, exe := range children {
		if exe == name {
			found = append(found, child)
		}
	}
	if len(found) != 1 {
		t.Fatalf("process %d has %d children named %s, want 1; its children: %v", pid, len(found), name, children)
	}
	return found[0]
}

// readStat reads a /proc/PID/stat file: the pid, its state letter and its
// parent's pid.
func readStat(path string) (pid int, state string, ppid int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", 0, false
	}
	s := string(b)
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 1 || end < open {
		return 0, "", 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(s[:open]))
	fields := strings.Fields(s[end+1:])
	if err != nil || len(fields) < 2 {
		return 0, "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return pid, fields[0], ppid, err == nil
}

// Alive reports whether pid is a process that has not exited (a zombie has).
func Alive(pid int) bool {
	_, state, _, ok := readStat(fmt.Sprintf("/proc/%d/stat", pid))
	return ok && state != "Z"
}

// WaitGone polls until none of pids is alive, and fails the test after
// within.
func WaitGone(t testing.TB, within time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var alive []int
		for _, pid := range pids {
			if Alive(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still alive after %v", alive, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SignalDelivered sends sig to pid and waits until the kernel has delivered
// it: it is no longer pending (the process took it, by a handler or by
// dying), or the process is gone. A test that signals a process which
// should survive uses it to know that the signal had its chance, without
// sleeping. It may be called from any goroutine (it returns its failure).
func SignalDelivered(pid int, sig syscall.Signal, within time.Duration) error {
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("kill -%d %d: %w", sig, pid, err)
	}
	deadline := time.Now().Add(within)
	for {
		pending, err := signalPending(pid, sig)
		switch {
		case errors.Is(err, os.ErrNotExist), err == nil && !pending:
			return nil
		case err != nil:
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("signal %v still pending for process %d after %v", sig, pid, within)
		}
		time.Sleep(time.Millisecond)
	}
}

// signalPending reports whether sig is pending for pid, process-wide or on
// any of its threads.
func signalPending(pid int, sig syscall.Signal) (bool, error) {
	statuses, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil {
		return false, err
	}
	if len(statuses) == 0 {
		return false, os.ErrNotExist
	}
	bit := uint64(1) << (uint(sig) - 1)
	for _, path := range statuses {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		for line := range strings.Lines(string(b)) {
			key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || (key != "SigPnd" && key != "ShdPnd") {
				continue
			}
			mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64)
			if err != nil {
				return false, fmt.Errorf("%s: %s: %w", path, key, err)
			}
			if mask&bit != 0 {
				return true, nil
			}
		}
	}
	return false, nil
}
