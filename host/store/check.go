package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

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
// nil. It holds bbolt's shared lock while it reads, so it never reads a file
// another host is writing; opening read-only is safe on any file (bbolt
// then reads only the two meta pages, after checking the file holds them).
// Under the lock it walks the file with plain reads (checkFile), then runs
// bbolt's consistency check (Tx.Check), then reads every record the store
// keeps. The file is not changed.
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
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return fmt.Errorf("store %s is %w (waited %s)", path, ErrLocked, lockTimeout)
	}
	if err != nil {
		// Say what is wrong in our words when the walk finds it, in bbolt's
		// otherwise.
		if werr := walkFile(path); werr != nil {
			err = werr
		}
		return corruptError(path, err)
	}
	defer db.Close()
	if err := walkFile(path); err != nil {
		return corruptError(path, err)
	}
	if err := boltCheck(db); err != nil {
		return corruptError(path, err)
	}
	if err := readAll(db); err != nil {
		return corruptError(path, err)
	}
	return nil
}

// walkFile runs checkFile on the file at path.
func walkFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkFile(f, fi.Size())
}

// boltCheck runs bbolt's consistency check in a read-only transaction and
// returns its first problem, with the count of the others. A problem the
// check found while rebuilding the freelist comes as a recovered panic;
// its text says so ("panic: freepages: ..."), which is bbolt's wording, not
// a crash, so the prefix is dropped.
func boltCheck(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		var first string
		n := 0
		for err := range tx.Check() {
			if n++; n == 1 {
				first = strings.TrimPrefix(err.Error(), "panic: ")
			}
		}
		switch {
		case n == 1:
			return fmt.Errorf("bbolt's check: %s", first)
		case n > 1:
			return fmt.Errorf("bbolt's check: %s (and %d more problems)", first, n-1)
		}
		return nil
	})
}

// readAll reads every record the store keeps and checks that each is where
// the bucket layout puts it and is JSON. It runs on a goroutine of its own
// with SetPanicOnFault, so that a fault in a mapped page (which checkFile
// should have made impossible) is an error, not a crash.
func readAll(db *bolt.DB) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("reading its records failed: %v", r)
			}
		}()
		done <- db.View(readRecords)
	}()
	return <-done
}

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
