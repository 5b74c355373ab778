package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// Defaults of Options.
const (
	DefaultOpTimeout      = 5 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	DefaultLease          = 10 * time.Second
)

// Options configure a Store. The zero value is what the host uses but for
// DSNEnv, which only words the errors.
type Options struct {
	// Now is the clock the store stamps turns with and expires pending
	// wakes by; default time.Now. Leases run on the database's clock.
	Now func() time.Time
	// SessionHistoryBytes is the most a session's messages take as stored
	// (their contents): AppendTurn deletes the oldest turns beyond it, as
	// store.Options.SessionHistoryBytes. 0: store.DefaultSessionHistoryBytes.
	SessionHistoryBytes int
	// PendingTTL is how long a pending wake lives after its CreatedAt; 0:
	// forever. As store.Options.PendingTTL.
	PendingTTL time.Duration
	// OpTimeout caps one call of the store, within its caller's context;
	// default DefaultOpTimeout. A database that stops answering fails the
	// call after it instead of holding the turn.
	OpTimeout time.Duration
	// ConnectTimeout caps each connection attempt; default
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Lease is how long a hold on a watch or a turn outlives this
	// replica's last renewal ([store] lease); default DefaultLease.
	Lease time.Duration
	// DSNEnv is the name of the environment variable the DSN came from
	// ([store] dsn_env), for Open's errors; default "the DSN".
	DSNEnv string
	// ListenCheck is how long the change listener waits for a notice
	// before it makes sure the database is still there (a ping, capped by
	// OpTimeout); default DefaultListenCheck. A database gone silent, with
	// no reset of the connection, stops the listener Following within
	// about ListenCheck + OpTimeout.
	ListenCheck time.Duration
	// Logger gets the store's own lines (LineLeaseRenewFailed); default
	// slog.Default().
	Logger *slog.Logger
}

// DefaultListenCheck is Options.ListenCheck's default.
const DefaultListenCheck = 5 * time.Second

// Store is the PostgreSQL backend. Create it with Open.
type Store struct {
	pool       *pgxpool.Pool
	now        func() time.Time
	pendingTTL time.Duration
	sessionMax int // Options.SessionHistoryBytes
	opTimeout  time.Duration
	lease      time.Duration
	// listenCheck is Options.ListenCheck.
	listenCheck time.Duration
	schema      string // the schema its tables are in (current_schema at Open)
	holder      string // this replica's name in the leases it holds

	closed  atomic.Bool
	closing sync.Once
	pruning store.PruneLoop
	leases  leases
	log     *slog.Logger

	listening sync.Mutex
	listen    struct {
		stop context.CancelFunc
		done chan struct{}
	}
	following atomic.Bool // Following
	// listenPings counts the listener's pings that the database answered,
	// for the tests (ListenPings).
	listenPings atomic.Int64
}

// Backend is s's capabilities, all of them: several hosts share a
// PostgreSQL store, so it has Turns and Changes.
func (s *Store) Backend() store.Backend {
	return store.Backend{
		Records: s, WakeLog: s, History: s, Pendings: s, Retainer: s, Leases: s,
		Turns: s, Changes: s, Close: s.Close,
	}
}

// Open connects to the database of dsn, creates or migrates its schema
// (see schema.go) in the connection's current schema (search_path), and
// returns the store. It fails, naming o.DSNEnv and never the DSN, when the
// DSN does not parse, when the database does not answer within ctx and the
// connect timeout, and when its schema is newer than this host's.
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.SessionHistoryBytes <= 0 {
		o.SessionHistoryBytes = store.DefaultSessionHistoryBytes
	}
	if o.ListenCheck <= 0 {
		o.ListenCheck = DefaultListenCheck
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DSNEnv == "" {
		o.DSNEnv = "the DSN"
	}
	if dsn == "" {
		return nil, fmt.Errorf("store: %s is empty: it must hold a PostgreSQL connection string", o.DSNEnv)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parser's error quotes the string: it stays here.
		return nil, fmt.Errorf("store: %s does not parse as a PostgreSQL connection string (a URL postgres://user@host:port/database or key=value pairs)", o.DSNEnv)
	}
	cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	// An idle connection is checked before use, so that a database that
	// came back is found on the next call, not the one after.
	cfg.HealthCheckPeriod = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: PostgreSQL in %s: %s", o.DSNEnv, class(err))
	}
	s := &Store{
		pool: pool, now: o.Now, pendingTTL: o.PendingTTL, sessionMax: o.SessionHistoryBytes,
		opTimeout: o.OpTimeout, lease: o.Lease, listenCheck: o.ListenCheck,
		holder: newHolder(), log: o.Logger,
	}
	s.leases.held = make(map[string]time.Time)
	cctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	if err := pool.Ping(cctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: the PostgreSQL database in %s is unreachable: %s", o.DSNEnv, class(err))
	}
	if err := s.migrate(cctx); err != nil {
		pool.Close()
		var tooNew *SchemaTooNewError
		if errors.As(err, &tooNew) {
			return nil, err
		}
		return nil, fmt.Errorf("store: the PostgreSQL database in %s: %w", o.DSNEnv, err)
	}
	s.startRenewing(o.Logger)
	return s, nil
}

// newHolder names this replica in the leases it holds: random, so that a
// restarted host never takes its predecessor's holds for its own.
func newHolder() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Close stops the background pruning and the renewal of the leases, gives
// up the leases this store holds (another replica takes over at once), then
// closes every connection. Closing a closed Store does nothing.
func (s *Store) Close() error {
	s.closing.Do(func() {
		s.closed.Store(true)
		s.pruning.Stop()
		s.stopListening()
		s.stopRenewing()
		s.releaseAll()
		s.pool.Close()
	})
	return nil
}

// op returns the context of one call: ctx, capped at OpTimeout. It fails
// with ErrClosed after Close, and with ctx's error when it has ended.
func (s *Store) op(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if s.closed.Load() {
		return nil, nil, store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opTimeout)
	return ctx, cancel, nil
}

// tx runs fn in a transaction of one call: committed when fn returns nil,
// rolled back otherwise. fn's error comes back as it is (fn wraps the
// driver's errors itself, with dbErr); a failed begin or commit is an
// *Error about what.
func (s *Store) tx(ctx context.Context, what string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	var fnErr error
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		fnErr = fn(ctx, tx)
		return fnErr
	})
	switch {
	case s.closed.Load():
		return store.ErrClosed
	case fnErr != nil:
		return fnErr
	}
	return dbErr(what, err)
}
