// Package filecheck is the store's check of a database file, which runs in
// a short child process (see package store's verify): bbolt trusts its file,
// and a damaged one crashes the process inside bbolt, where a crash in the
// child only says the file is corrupt.
//
// A process started with Env set checks that file and exits from this
// package's init, with ExitCorrupt or ExitLocked, or 0 for a sound file.
// The package imports nothing of the module, so that it is initialised
// early and the check process starts little else before it runs: package
// store imports it, so every executable that links the store (wakehost, a
// test binary) is a check process too; package store's tests start a
// checker that links this package alone.
//
// It also holds the names of the store's buckets and keys, the layout the
// check reads every record by.
package filecheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// LockTimeout is how long the store waits for another process to release
// the database file, the check's read-only open included.
const LockTimeout = time.Second

// The store's top-level buckets, the nested one under each session, and the
// key of a session's last turn in its bucket.
var (
	BucketSessions = []byte("sessions")
	BucketPending  = []byte("pending")
	BucketPods     = []byte("pods")
	BucketWakes    = []byte("wakes")
	BucketMessages = []byte("messages")
	KeyLastTurn    = []byte("lastTurn")
)

// Env names the file the check process checks.
const Env = "WAKEONCHAT_CHECK_STORE_FILE"

// EnvLockTimeout is how long the check process waits for another process
// to release the file, as time.ParseDuration reads it: the store's own
// wait, which it sets. LockTimeout when it is absent, does not parse or is
// not positive (bbolt would wait forever).
const EnvLockTimeout = "WAKEONCHAT_CHECK_STORE_LOCK_TIMEOUT"

// The check process's exit statuses, beside 0 (the file is sound) and a
// crash (it is not).
const (
	ExitCorrupt = 3 // what is wrong is on stdout, on one line
	ExitLocked  = 4 // another process holds the file
)

func init() {
	if path, ok := os.LookupEnv(Env); ok {
		// syscall.Exit, not os.Exit: there is nothing to flush, and a
		// race-enabled binary (a test's) would otherwise spend a second
		// and more finishing the race detector before it exits 0.
		lockTimeout := LockTimeout
		if d, err := time.ParseDuration(os.Getenv(EnvLockTimeout)); err == nil && d > 0 {
			lockTimeout = d
		}
		syscall.Exit(Process(path, lockTimeout, os.Stdout))
	}
}

// Process is the check process: it checks the file at path, waiting up to
// lockTimeout for its lock, writes what is wrong to out, and returns its
// exit status.
func Process(path string, lockTimeout time.Duration, out io.Writer) int {
	err := File(path, lockTimeout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, bolt.ErrTimeout):
		return ExitLocked
	}
	fmt.Fprintln(out, strings.ReplaceAll(err.Error(), "\n", "; "))
	return ExitCorrupt
}

// File opens the file at path read-only (bbolt then reads only its two
// meta pages), waiting up to lockTimeout for another process to release
// it, checks that it holds every page its last transaction names, then
// runs bbolt's check and reads every record.
func File(path string, lockTimeout time.Duration) error {
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
			first = ProblemText(err.Error())
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
	if b := tx.Bucket(BucketPending); b != nil {
		if err := jsonValues(b, "pending wake of session"); err != nil {
			return err
		}
	}
	if b := tx.Bucket(BucketPods); b != nil {
		if err := jsonValues(b, "record of pod"); err != nil {
			return err
		}
	}
	if b := tx.Bucket(BucketWakes); b != nil {
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
	sessions := tx.Bucket(BucketSessions)
	if sessions == nil {
		return nil
	}
	return sessions.ForEach(func(k, v []byte) error {
		sb := sessions.Bucket(k)
		if v != nil || sb == nil {
			return fmt.Errorf("session %s is not a bucket", quoteKey(k))
		}
		if v := sb.Get(KeyLastTurn); v != nil && len(v) != 8 {
			return fmt.Errorf("session %s has a last turn of %d bytes, want 8", quoteKey(k), len(v))
		}
		msgs := sb.Bucket(BucketMessages)
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

// ProblemText is bbolt's description of a problem it met as a panic, such
// as "panic: assertion failed: Page expected to be: 23, but self identifies
// as 0", without the words that make it read like a crash of the host.
func ProblemText(s string) string {
	for _, prefix := range []string{"panic: ", "assertion failed: ", "runtime error: "} {
		s = strings.TrimPrefix(s, prefix)
	}
	return s
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
