package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/wakeonchat/wakeonchat/host/store/internal/filecheck"
)

// lockTimeout is how long Open waits for another process to release the
// database file, unless Options.lockTimeout says otherwise.
const lockTimeout = filecheck.LockTimeout

// The top-level buckets and the nested one under each session (their names
// are filecheck's, which reads every record by them).
var (
	bucketSessions = filecheck.BucketSessions
	bucketPending  = filecheck.BucketPending
	bucketPods     = filecheck.BucketPods
	bucketMessages = filecheck.BucketMessages
	// keyLastTurn, in a session's bucket, is when its last turn was
	// stored (timeValue).
	keyLastTurn = filecheck.KeyLastTurn
)

var (
	// ErrLocked is returned by Open when another process holds the database.
	ErrLocked = errors.New("locked by another process")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("store: closed")
)

// Store is wake-on-chat's embedded database. Its zero value is not usable;
// call Open.
type Store struct {
	db         *bolt.DB
	now        func() time.Time
	pendingTTL time.Duration
	sessionMax int // Options.SessionHistoryBytes

	pruning PruneLoop // the background pruning StartPruning runs

	leases leases // TakeLease's

	podLocks KeyedMutex // UpdateRecord's, one per pod
}

// Options configure a Store. The zero value is what Open uses.
type Options struct {
	// Now is the clock the store stamps turns with and expires pending
	// wakes by; default time.Now.
	Now func() time.Time
	// PendingTTL is how long a pending wake lives after its CreatedAt: an
	// older one reads as absent and is deleted by Prune. 0 (the default):
	// they never expire.
	PendingTTL time.Duration
	// SessionHistoryBytes is the most a session's messages take as stored
	// (their JSON): AppendTurn deletes the oldest turns beyond it (see
	// History). 0 (the default): DefaultSessionHistoryBytes.
	SessionHistoryBytes int

	// noSync skips fsync on commit, for tests that write thousands of
	// transactions and do not test durability.
	noSync bool
	// lockTimeout is how long Open waits for another process to release
	// the file; 0: lockTimeout. For the tests of that wait.
	lockTimeout time.Duration
}

// Open opens the database at path, creating its parent directory (0o700) and
// the file (0o600) when they do not exist. When another process holds the
// database, Open gives up after about a second with an error wrapping
// ErrLocked.
//
// An existing file is checked whole before it is opened for writing (see
// verify): a damaged one — truncated, empty, not a bbolt file, or with a
// page that does not hold what the tree says — is refused with a one-line
// error wrapping ErrCorrupt that names the file and what to do, and is left
// as it was.
func Open(path string) (*Store, error) { return Options{}.Open(path) }

// Open is [Open] with the options o.
func (o Options) Open(path string) (*Store, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SessionHistoryBytes <= 0 {
		o.SessionHistoryBytes = DefaultSessionHistoryBytes
	}
	if o.lockTimeout <= 0 {
		o.lockTimeout = lockTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store directory: %w", err)
	}
	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		// A new store: bbolt creates the file.
	case err != nil:
		return nil, fmt.Errorf("store %s: %w", path, err)
	default:
		if err := verify(path, o.lockTimeout); err != nil {
			return nil, err
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: o.lockTimeout,
		// bbolt's recommended defaults: the freelist is rebuilt at open
		// instead of written with every commit (one page write less per
		// turn), and kept as a hashmap. Every commit is still fsynced.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		NoSync:         o.noSync,
	})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("store %s is %w (waited %s)", path, ErrLocked, o.lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketSessions, bucketPending, bucketPods, bucketWakes} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	return &Store{db: db, now: o.Now, pendingTTL: o.PendingTTL, sessionMax: o.SessionHistoryBytes}, nil
}

// Close stops the background pruning (waiting for a batch under way), then
// closes the database and releases its lock. It waits for running
// transactions. Closing a closed Store does nothing and returns nil.
func (s *Store) Close() error {
	s.stopPruning()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store close: %w", err)
	}
	return nil
}

// isClosed reports whether Close was called.
func (s *Store) isClosed() bool {
	s.pruning.mu.Lock()
	defer s.pruning.mu.Unlock()
	return s.pruning.closed
}

// view runs fn in a read-only transaction, unless ctx has ended.
func (s *Store) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return closedErr(s.db.View(fn))
}

// update runs fn in a read-write transaction; an error from fn rolls it
// back. bbolt's transactions take no context: ctx is looked at before the
// transaction and again once it has the writer's lock (another write may
// have held it), and a ctx that ended by then rolls it back before fn
// writes anything. A transaction under way is short: it runs to its end.
func (s *Store) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return closedErr(s.db.Update(func(tx *bolt.Tx) error {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		return fn(tx)
	}))
}

// ctxErr is ctx's error, when it has ended, as the store returns it.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

func closedErr(err error) error {
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// bucket returns the top-level bucket name, which Open created.
func bucket(tx *bolt.Tx, name []byte) (*bolt.Bucket, error) {
	b := tx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("store: bucket %s missing", name)
	}
	return b, nil
}

// UTC is t in UTC without its monotonic clock reading, as every backend
// stores a time; the zero time stays zero.
func UTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Round(0).UTC()
}
