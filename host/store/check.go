package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	bolt "go.etcd.io/bbolt"
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
// it for writing, and returns an error wrapping ErrCorrupt or ErrLocked, or
// nil. The file is not changed.
//
// bbolt trusts its file: a damaged page fails an assertion in a goroutine of
// bbolt's own, or points past the end of the memory map (SIGBUS), and either
// ends the process. So the check runs in a short child process, this same
// executable started again with checkEnv naming the file (see init): it
// opens the file read-only under bbolt's shared lock, runs bbolt's
// consistency check (Tx.Check) and reads every record. A child that crashes
// has found a corrupt file; one that passes leaves nothing the writable open
// can trip on, since that open walks the same tree the check walked.
func verify(path string) error {
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
	cmd.Env = append(os.Environ(), checkEnv+"="+path)
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
	case exit.ExitCode() == checkLocked:
		return fmt.Errorf("store %s is %w (waited %s)", path, ErrLocked, lockTimeout)
	case exit.ExitCode() == checkCorrupt:
		return corruptError(path, errors.New(strings.TrimSpace(problem.String())))
	}
	detail := exit.String()
	if line, _, _ := strings.Cut(crash.String(), "\n"); strings.HasPrefix(line, "panic: ") {
		detail = problemText(line) // the trace stays out of the one line
	}
	return corruptError(path, fmt.Errorf("bbolt crashed reading it: %s", detail))
}

// problemText is bbolt's description of a problem it met as a panic, such
// as "panic: assertion failed: Page expected to be: 23, but self identifies
// as 0", without the words that make it read like a crash of the host.
func problemText(s string) string {
	for _, prefix := range []string{"panic: ", "assertion failed: ", "runtime error: "} {
		s = strings.TrimPrefix(s, prefix)
	}
	return s
}

// checkExecutable is the check process's program: this one (the tests
// build a checker without the race detector).
var checkExecutable = os.Executable

// checkEnv names the file the check process checks. A process started with
// it set checks that file and exits, before anything else runs (init): the
// executable is whatever links this package, wakehost or a test binary.
const checkEnv = "WAKEONCHAT_CHECK_STORE_FILE"

// The check process's exit statuses, beside 0 (the file is sound) and a
// crash (it is not).
const (
	checkCorrupt = 3 // what is wrong is on stdout, on one line
	checkLocked  = 4 // another process holds the file
)

func init() {
	if path, ok := os.LookupEnv(checkEnv); ok {
		// syscall.Exit, not os.Exit: there is nothing to flush, and a
		// race-enabled binary (a test's) would otherwise spend a second
		// and more finishing the race detector before it exits 0.
		syscall.Exit(checkProcess(path, os.Stdout))
	}
}

// checkProcess is the check process: it checks the file at path, writes
// what is wrong to out, and returns its exit status.
func checkProcess(path string, out io.Writer) int {
	err := checkFile(path)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, bolt.ErrTimeout):
		return checkLocked
	}
	fmt.Fprintln(out, strings.ReplaceAll(err.Error(), "\n", "; "))
	return checkCorrupt
}

// checkFile opens the file at path read-only (bbolt then reads only its two
// meta pages), checks that it holds every page its last transaction names,
// then runs bbolt's check and reads every record.
func checkFile(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if err != nil {
		return err
	}
	defer db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return db.View(func(tx *bolt.Tx) error {
		if fi.Size() < tx.Size() {
			ps := int64(db.Info().PageSize)
			return fmt.Errorf("it is truncated to %d bytes; its last transaction needs %d pages of %d bytes",
				fi.Size(), tx.Size()/ps, ps)
		}
		if err := boltCheck(tx); err != nil {
			return err
		}
		return readRecords(tx)
	})
}

// boltCheck runs bbolt's consistency check and returns its first problem,
// with the count of the others. A problem the check met as a panic (a failed
// assertion, or one found while rebuilding the freelist) is recovered by
// bbolt and comes as "panic: ...".
func boltCheck(tx *bolt.Tx) error {
	var first string
	n := 0
	for err := range tx.Check() {
		if n++; n == 1 {
			first = problemText(err.Error())
		}
	}
	switch {
	case n == 1:
		return fmt.Errorf("bbolt's check: %s", first)
	case n > 1:
		return fmt.Errorf("bbolt's check: %s (and %d more problems)", first, n-1)
	}
	return nil
}

// readRecords reads every record the store keeps and checks that each is
// where the bucket layout puts it and is JSON.
func readRecords(tx *bolt.Tx) error {
	jsonValues := func(b *bolt.Bucket, what string) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("%s %s is a bucket, want a record", what, quoteKey(k))
			}
			if !json.Valid(v) {
				return fmt.Errorf("%s %s is not JSON", what, quoteKey(k))
			}
			return nil
		})
	}
	if b := tx.Bucket(bucketPending); b != nil {
		if err := jsonValues(b, "pending wake of session"); err != nil {
			return err
		}
	}
	if b := tx.Bucket(bucketPods); b != nil {
		if err := jsonValues(b, "record of pod"); err != nil {
			return err
		}
	}
	if b := tx.Bucket(bucketWakes); b != nil {
		err := b.ForEach(func(pod, v []byte) error {
			log := b.Bucket(pod)
			if v != nil || log == nil {
				return fmt.Errorf("wake log of pod %s is not a bucket", quoteKey(pod))
			}
			return log.ForEach(func(k, v []byte) error {
				if len(k) != 8 {
					return fmt.Errorf("wake log of pod %s has a key of %d bytes, want 8", quoteKey(pod), len(k))
				}
				if v == nil || !json.Valid(v) {
					return fmt.Errorf("wake log of pod %s entry %x is not JSON", quoteKey(pod), k)
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
	}
	sessions := tx.Bucket(bucketSessions)
	if sessions == nil {
		return nil
	}
	return sessions.ForEach(func(k, v []byte) error {
		sb := sessions.Bucket(k)
		if v != nil || sb == nil {
			return fmt.Errorf("session %s is not a bucket", quoteKey(k))
		}
		if v := sb.Get(keyLastTurn); v != nil && len(v) != 8 {
			return fmt.Errorf("session %s has a last turn of %d bytes, want 8", quoteKey(k), len(v))
		}
		msgs := sb.Bucket(bucketMessages)
		if msgs == nil {
			return fmt.Errorf("session %s has no messages bucket", quoteKey(k))
		}
		return msgs.ForEach(func(seq, v []byte) error {
			if len(seq) != 8 {
				return fmt.Errorf("session %s has a message key of %d bytes, want 8", quoteKey(k), len(seq))
			}
			if v == nil || !json.Valid(v) {
				return fmt.Errorf("session %s message %x is not JSON", quoteKey(k), seq)
			}
			return nil
		})
	})
}

// quoteKey quotes a key for an error message: on one line, and cut short
// when it is long (a damaged page can make any bytes a key).
func quoteKey(k []byte) string {
	const max = 40
	if len(k) > max {
		return strconv.Quote(string(k[:max])) + "..."
	}
	return strconv.Quote(string(k))
}
