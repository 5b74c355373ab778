// Package pgtest gives the tests that need a PostgreSQL server one: a
// fresh schema of their own on the server at WAKE_TEST_POSTGRES_DSN
// (default DefaultDSN), so that packages and tests run in parallel on one
// database. When no server answers, a test that asks for one is skipped,
// and says so, unless WAKE_TEST_POSTGRES=required (CI's setting), which
// makes that a failure. `make test` runs ./probe first, which says in one
// line whether the PostgreSQL suites run or are skipped.
//
// It is imported by tests only, and by ./probe and host/cmd/wakebench,
// which measure against the same server.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The environment of the PostgreSQL tests.
const (
	EnvDSN      = "WAKE_TEST_POSTGRES_DSN"
	EnvRequired = "WAKE_TEST_POSTGRES"
	DefaultDSN  = "postgres://postgres@127.0.0.1:5432/test"
)

// ServerDSN is the test server's DSN: WAKE_TEST_POSTGRES_DSN, or DefaultDSN.
func ServerDSN() string {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn
	}
	return DefaultDSN
}

// Required reports whether a missing server fails the tests
// (WAKE_TEST_POSTGRES=required).
func Required() bool { return os.Getenv(EnvRequired) == "required" }

// Where names the test server without its credentials: host, port and
// database.
func Where() string {
	cfg, err := pgx.ParseConfig(ServerDSN())
	if err != nil {
		return EnvDSN + " (it does not parse)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

var (
	probeOnce sync.Once
	probeErr  error
)

// Available checks, once per process, that the server answers within 3 s;
// nil when it does.
func Available() error {
	probeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, ServerDSN())
		if err != nil {
			probeErr = err
			return
		}
		defer conn.Close(ctx)
		probeErr = conn.Ping(ctx)
	})
	return probeErr
}

// Need skips t, loudly, when no server answers; with WAKE_TEST_POSTGRES=
// required it fails t instead.
func Need(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if Required() {
			t.Fatalf("%s=required and no PostgreSQL answers at %s: %v", EnvRequired, Where(), err)
		}
		t.Skipf("SKIPPED: no PostgreSQL answers at %s (%s; set %s to a server, or %s=required to fail instead)",
			Where(), shortErr(err), EnvDSN, EnvRequired)
	}
}

// Reason is the last part of a connection error, on one line:
// "connection refused".
func Reason(err error) string { return shortErr(err) }

func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// Schema makes a fresh, empty schema for t, dropped with everything in it at
// t's cleanup, and returns a DSN of the test server whose search_path is
// that schema. It calls Need first.
//
// The DSN's sessions commit without waiting for the commit to reach the
// disk (synchronous_commit off): no test survives a crash of the server,
// and a commit is otherwise the same (what it makes visible, to whom, and
// when). The tests commit thousands of transactions, and on a loaded
// machine the wait for the disk was most of their time. NewSchema's DSN,
// which the benchmark harness measures with, keeps the server's setting.
func Schema(t testing.TB) string {
	t.Helper()
	Need(t)
	dsn, drop, err := NewSchema(context.Background(), "wake_test_")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Fatalf("%v", err)
		}
	})
	return ForTests(dsn)
}

// ForTests is dsn as the tests' sessions use it: they commit without
// waiting for the disk (synchronous_commit off, see Schema), and try
// without TLS first, then with it if the server wants it (sslmode=allow,
// unless dsn names an sslmode). The test server is on loopback, and the
// TLS handshake of each connection (the tests make hundreds) cost the
// server more than anything a store then asks of it.
func ForTests(dsn string) string {
	dsn = withParam(dsn, "synchronous_commit", "off")
	if !hasSSLMode(dsn) {
		dsn = withParam(dsn, "sslmode", "allow")
	}
	return dsn
}

// hasSSLMode reports whether dsn names an sslmode: a URL's query
// parameter, or a key=value string's pair.
func hasSSLMode(dsn string) bool {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		return err != nil || u.Query().Has("sslmode")
	}
	return regexp.MustCompile(`(^|\s)sslmode\s*=`).MatchString(dsn)
}

// NewSchema makes a fresh, empty schema on the test server, named prefix
// and 12 random hex digits, and returns a DSN of the server whose
// search_path is that schema and drop, which drops it with everything in
// it. It is Schema without a test: it does not call Need, and ctx bounds
// both the creation and the drop.
func NewSchema(ctx context.Context, prefix string) (dsn string, drop func() error, err error) {
	var b [6]byte
	rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	if err := execServer(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", nil, err
	}
	drop = func() error { return execServer(ctx, "DROP SCHEMA "+name+" CASCADE") }
	return WithSearchPath(ServerDSN(), name), drop, nil
}

// server is the pool NewSchema creates and drops schemas with, opened on
// first use and kept for the process: a connection per schema and per drop
// was a good part of a test's setup.
var server struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// execServer runs sql on the test server (ServerDSN), on a connection of
// server's pool, within 30 s.
func execServer(ctx context.Context, sql string) error {
	server.once.Do(func() {
		server.pool, server.err = pgxpool.New(context.Background(), ServerDSN())
	})
	if server.err != nil {
		return fmt.Errorf("connecting to the test PostgreSQL: %w", server.err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := server.pool.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// Exec runs sql on the schema of dsn (a DSN Schema returned), for a test
// that reaches into the tables.
func Exec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	if err := exec(context.Background(), dsn, sql, args...); err != nil {
		t.Fatalf("%v", err)
	}
}

// exec runs sql on a connection of its own to dsn, within 30 s.
func exec(ctx context.Context, dsn, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connecting to the test PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// WithSearchPath is dsn with its search_path set to schema: a URL gets the
// query parameter, a key=value string the pair.
func WithSearchPath(dsn, schema string) string { return withParam(dsn, "search_path", schema) }

// withParam is dsn with the run-time parameter key set to value (pgx sends
// a parameter it does not know itself to the server with the connection's
// start): a URL gets the query parameter, a key=value string the pair.
func withParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Set(key, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " " + key + "=" + value
}

// withHostPort is dsn with its host and port replaced.
func withHostPort(dsn, host, port string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Host = net.JoinHostPort(host, port)
			return u.String()
		}
	}
	return dsn + " host=" + host + " port=" + port
}
