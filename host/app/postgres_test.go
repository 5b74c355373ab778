package app_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
	"github.com/wakeonchat/wakeonchat/host/store/postgres"
)

// TestPostgresStartupErrors: [store] backend = "postgres" with its variable
// unset or empty, or with a database that does not answer, stops app.New with an
// error naming the key or the variable, never the connection string.
func TestPostgresStartupErrors(t *testing.T) {
	t.Parallel()
	pgtest.Need(t)
	const secret = "pw-s3cret"
	down, _ := pgtest.NewProxy(t, pgtest.ServerDSN())
	down.Down()
	unreachable := "postgres://wake:" + secret + "@" + down.Addr() + "/test"
	tooNew := pgtest.Schema(t)
	pgtest.Exec(t, tooNew, `CREATE TABLE wake_schema (version int NOT NULL)`)
	pgtest.Exec(t, tooNew, `INSERT INTO wake_schema VALUES ($1)`, postgres.SchemaVersion+7)
	for _, tc := range []struct {
		name, dsn, want string
		empty           bool // the variable is set, to ""
	}{
		{"variable unset", "", "store.dsn_env: WAKE_TEST_STORE_DSN is not set", false},
		{"variable empty", "", "store.dsn_env: WAKE_TEST_STORE_DSN is empty", true},
		{"unreachable", unreachable, "the PostgreSQL database in WAKE_TEST_STORE_DSN is unreachable: ECONNREFUSED", false},
		{"schema too new", tooNew, "newer than this host's", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := e2e.WriteConfig(t, e2e.Config{StoreDSNEnv: "WAKE_TEST_STORE_DSN"})
			a, err, panicked := e2e.NewApp(app.Options{
				ConfigPath: cfg,
				Logger:     slog.New(slog.DiscardHandler),
				Getenv: func(k string) string {
					if k == "WAKE_TEST_STORE_DSN" {
						return tc.dsn
					}
					return ""
				},
				LookupEnv: func(k string) (string, bool) {
					if k == "WAKE_TEST_STORE_DSN" {
						return tc.dsn, tc.dsn != "" || tc.empty
					}
					return "", false
				},
				Clock:     fakeclock.New(t0),
				PluginDir: binDir,
			})
			if panicked != nil || a != nil || err == nil {
				if a != nil {
					a.Shutdown(t.Context())
				}
				t.Fatalf("app.New: app %v, error %v, panic %v; want an error", a, err, panicked)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("app.New: %q, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || (tc.dsn != "" && strings.Contains(err.Error(), tc.dsn)) {
				t.Errorf("app.New's error %q quotes the connection string", err)
			}
		})
	}
}

// TestPostgresDatabaseDrops: a host on PostgreSQL whose database drops
// answers its turns with the generic 502, never a wrong reply (until its
// change listener has noticed, an ask may be answered from the record it
// holds); once the database is back, the host answers again, without a
// restart. Nothing of
// the connection string reaches the log.
func TestPostgresDatabaseDrops(t *testing.T) {
	t.Parallel()
	proxy, dsn := pgtest.NewProxy(t, pgtest.Schema(t))
	h := startHost(t, hostOptions{simulate: true, clock: fakeclock.New(t0), postgres: dsn})

	if got := h.ask(t, "s", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q, want %q", got, e2e.ReplyWaking)
	}
	proxy.Down()
	// Until the change listener has seen its connection go, an ask may
	// still be decided on the record the host holds: "still waking", what
	// the database last said. From the first 502 on, every ask is one.
	deadline := time.Now().Add(10 * time.Second)
	for failed := 0; failed < 3; {
		status, body := h.do(t, http.MethodPost, "/api/chat", chatRequest{Message: "hello", SessionID: "s"})
		switch {
		case status == http.StatusBadGateway && body == e2e.ProviderFailed:
			failed++
		case failed == 0 && status == http.StatusOK && strings.Contains(body, e2e.ReplyStillWaking(0)):
			if time.Now().After(deadline) {
				t.Fatalf("10 s after the database went, asks are still answered from the held record")
			}
			time.Sleep(10 * time.Millisecond)
		default:
			t.Fatalf("ask with the database gone (after %d 502s): %d %s, want 502 %s", failed, status, body, e2e.ProviderFailed)
		}
	}
	if lines := h.log.Matching(t, "turn failed"); len(lines) != 3 {
		t.Errorf("%d turn failed lines, want 3", len(lines))
	}
	proxy.Up()
	deadline = time.Now().Add(10 * time.Second)
	for {
		status, body := h.do(t, http.MethodPost, "/api/chat", chatRequest{Message: "hello", SessionID: "s"})
		if status == http.StatusOK {
			if !strings.Contains(body, e2e.ReplyStillWaking(0)) {
				t.Errorf("the ask after the database came back: %s, want %q", body, e2e.ReplyStillWaking(0))
			}
			break
		}
		if status != http.StatusBadGateway || time.Now().After(deadline) {
			t.Fatalf("10 s after the database came back: %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, leak := range []string{dsn, proxy.Addr(), "postgres@"} {
		if strings.Contains(h.log.String(), leak) {
			t.Errorf("the log carries %q", leak)
		}
	}
}
