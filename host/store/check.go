package store

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/host/store/internal/filecheck"
)

// ErrCorrupt is wrapped by Open's error when the database file is damaged:
// truncated, empty, not a bbolt file, or with pages that do not hold what
// the tree says they hold.
var ErrCorrupt = errors.New("corrupt")

// corruptError is Open's one-line error for a damaged file: what is wrong,
// and what the operator can do about it.
func corruptError(path string, problem error) error {
	return fmt.Errorf("store %s is %w: %w; move the file aside and restore it from a backup, "+
		"or leave it moved aside and the host starts with an empty store", path, ErrCorrupt, problem)
}

// verify checks the existing database file at path before the store opens
// it for writing, waiting up to lockTimeout for another process to release
// it, and returns an error wrapping ErrCorrupt or ErrLocked, or nil. The
// file is not changed.
//
// bbolt trusts its file: a damaged page fails an assertion in a goroutine of
// bbolt's own, or points past the end of the memory map (SIGBUS), and either
// ends the process. So the check runs in a short child process, this same
// executable started again with filecheck.Env naming the file and
// filecheck.EnvLockTimeout the wait (see package
// filecheck, whose init runs the check): it opens the file read-only under
// bbolt's shared lock, runs bbolt's
// consistency check (Tx.Check) and reads every record. A child that crashes
// has found a corrupt file; one that passes leaves nothing the writable open
// can trip on, since that open walks the same tree the check walked.
func verify(path string, lockTimeout time.Duration) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	if fi.Size() == 0 {
		// bbolt would write a new store over it and every record would be
		// gone without a word.
		return corruptError(path, errors.New("the file is empty (0 bytes)"))
	}
	exe, err := checkExecutable()
	if err != nil {
		return fmt.Errorf("store %s: checking it: %w", path, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), filecheck.Env+"="+path, filecheck.EnvLockTimeout+"="+lockTimeout.String())
	var problem, crash strings.Builder
	cmd.Stdout = &problem // one line when it exits checkCorrupt
	cmd.Stderr = &crash   // a panic's message and trace otherwise
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &exit):
		return fmt.Errorf("store %s: checking it: %w", path, err)
	case exit.ExitCode() == filecheck.ExitLocked:
		return fmt.Errorf("store %s is %w (waited %s)", path, ErrLocked, lockTimeout)
	case exit.ExitCode() == filecheck.ExitCorrupt:
		return corruptError(path, errors.New(strings.TrimSpace(problem.String())))
	}
	detail := exit.String()
	if line, _, _ := strings.Cut(crash.String(), "\n"); strings.HasPrefix(line, "panic: ") {
		detail = filecheck.ProblemText(line) // the trace stays out of the one line
	}
	return corruptError(path, fmt.Errorf("bbolt crashed reading it: %s", detail))
}

// checkExecutable is the check process's program: this one (the tests
// build a checker without the race detector).
var checkExecutable = os.Executable
