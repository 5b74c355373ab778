package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/store/postgres"
	"github.com/wakeonchat/wakeonchat/machines"
)

func open(ctx context.Context, dsn string) (*postgres.Store, error) {
	return postgres.Open(ctx, dsn, postgres.Options{DSNEnv: "WAKE_POSTGRES_DSN", ConnectTimeout: 2 * time.Second})
}

// TestSchemaVersions: a fresh schema is created at SchemaVersion; opening it
// again changes nothing; replicas starting at once on a fresh schema all
// open it; a schema a newer host migrated is refused, saying so.
func TestSchemaVersions(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() {
			s, err := open(ctx, dsn)
			if err == nil {
				err = s.PutRecord(t.Context(), machines.NewRecord("qwen"))
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("three replicas opening a fresh schema at once: %v", err)
		}
	}
	if got := version(t, dsn); got != postgres.SchemaVersion {
		t.Errorf("schema version %d, want %d", got, postgres.SchemaVersion)
	}

	s, err := open(ctx, dsn)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	if recs, err := s.Records(t.Context()); err != nil || len(recs) != 1 {
		t.Errorf("records after reopening = %v, %v; want the one stored", recs, err)
	}
	s.Close()

	pgtest.Exec(t, dsn, `UPDATE wake_schema SET version = $1`, postgres.SchemaVersion+1)
	_, err = open(ctx, dsn)
	var tooNew *postgres.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Version != postgres.SchemaVersion+1 || tooNew.Supports != postgres.SchemaVersion {
		t.Fatalf("opening a newer schema: %v, want a SchemaTooNewError", err)
	}
	if want := "newer than this host's"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func version(t *testing.T, dsn string) int {
	t.Helper()
	s, err := open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := postgres.Version(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrateFromVersion1: a database a host of schema version 1 made
// (before the wake log) is migrated at Open: its records are kept, its
// pods have no logged wake, and wakes are logged from then on.
func TestMigrateFromVersion1(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	s, err := open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	wake := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
	rec := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wake, ReadyAt: wake.Add(4 * time.Minute)}
	if err := s.PutRecord(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Version 2 only added wake_wakes: without it, the schema is version 1's.
	pgtest.Exec(t, dsn, `DROP TABLE wake_wakes`)
	pgtest.Exec(t, dsn, `UPDATE wake_schema SET version = 1`)

	s, err = open(ctx, dsn)
	if err != nil {
		t.Fatalf("opening a version 1 schema: %v", err)
	}
	defer s.Close()
	if got := version(t, dsn); got != postgres.SchemaVersion {
		t.Errorf("schema version after the migration %d, want %d", got, postgres.SchemaVersion)
	}
	if got, err := s.Record(t.Context(), "qwen"); err != nil || !got.Equal(rec) {
		t.Errorf("the record after the migration = %+v, %v; want %+v", got, err, rec)
	}
	if ws, err := s.Wakes(t.Context(), "qwen"); err != nil || len(ws) != 0 {
		t.Errorf("Wakes after the migration = %v, %v; want none", ws, err)
	}
	w := machines.Wake{Pod: "qwen", RequestedAt: wake.Add(time.Hour), ReadyAt: wake.Add(time.Hour + 3*time.Minute), Outcome: "ready"}
	if err := s.PutRecordWake(t.Context(), rec, w); err != nil {
		t.Fatal(err)
	}
	if ws, err := s.Wakes(t.Context(), "qwen"); err != nil || len(ws) != 1 || !ws[0].RequestedAt.Equal(w.RequestedAt) {
		t.Errorf("Wakes after one logged = %v, %v; want it", ws, err)
	}
}

// TestRecordFromBeforeTheStamp: the answer's stamp (Record.AnsweredAt) is
// a key of the record's JSON, which needs no migration: a record a host
// stored before it (no key) reads with no stamp, a stamp stored on it
// reads back, and the notice of that change carries it to another
// replica.
func TestRecordFromBeforeTheStamp(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	a := openAt(t, dsn, postgres.Options{})
	b := openAt(t, dsn, postgres.Options{})
	changes := make(chan store.RecordChange, 4)
	if err := b.OnRecordChange(t.Context(), func(c store.RecordChange) { changes <- c }); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, dsn, `INSERT INTO wake_pods (pod, record) VALUES ('qwen', $1::jsonb)`,
		`{"pod":"qwen","state":"ready","wakeRequestedAt":"2026-09-09T12:00:00Z","modelLoadingSince":"0001-01-01T00:00:00Z",`+
			`"readyAt":"2026-09-09T12:04:00Z","refusedStatus":0,"runningAt":"2026-09-09T12:03:00Z","served":true}`)
	wake := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
	old := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wake,
		ReadyAt: wake.Add(4 * time.Minute), RunningAt: wake.Add(3 * time.Minute), Served: true}
	if got, err := a.Record(t.Context(), "qwen"); err != nil || !got.Equal(old) {
		t.Fatalf("the record from before the stamp = %+v, %v; want %+v", got, err, old)
	}

	stamped := old
	stamped.AnsweredAt = wake.Add(7 * time.Minute)
	if _, _, err := a.UpdateRecord(t.Context(), "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) {
		r.AnsweredAt = stamped.AnsweredAt
		return r, nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Record(t.Context(), "qwen"); err != nil || !got.Equal(stamped) {
		t.Errorf("the stamped record, read on another replica = %+v, %v; want %+v", got, err, stamped)
	}
	select {
	case c := <-changes:
		if !c.Before.Equal(old) || !c.After.Equal(stamped) {
			t.Errorf("the notice of the stamp = %+v, want %+v to %+v", c, old, stamped)
		}
	case <-time.After(5 * time.Second):
		t.Error("the notice of the stamp did not reach the other replica within 5 s")
	}
}

// TestOpenErrors: what Open says about a DSN it cannot use names the
// variable and says what is wrong, and never quotes the DSN or its
// password.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	pgtest.Need(t)
	const secret = "s3cret-pw"
	_, proxied := pgtest.NewProxy(t, "postgres://wake:"+secret+"@127.0.0.1:5432/test")
	down, _ := pgtest.NewProxy(t, pgtest.ServerDSN())
	down.Down()
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"empty", "", "WAKE_POSTGRES_DSN is empty"},
		{"not a DSN", "postgres://wake:" + secret + "@[::1", "WAKE_POSTGRES_DSN does not parse"},
		{"nobody listens", "postgres://wake:" + secret + "@" + down.Addr() + "/test", "WAKE_POSTGRES_DSN is unreachable: ECONNREFUSED"},
		{"wrong password", strings.Replace(proxied, "wake:", "nosuchuser:", 1), "WAKE_POSTGRES_DSN is unreachable: SQLSTATE"},
		{"no such database", strings.Replace(pgtest.ServerDSN(), "/test", "/no_such_db_"+secret, 1), "SQLSTATE 3D000 (no such database)"},
		{"no such schema", pgtest.WithSearchPath(pgtest.ServerDSN(), "no_such_schema"),
			`the schema search_path names does not exist (search_path: no_such_schema): create it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := open(context.Background(), tc.dsn)
			if err == nil {
				s.Close()
				t.Fatal("Open: no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %q, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || (tc.dsn != "" && strings.Contains(err.Error(), tc.dsn)) {
				t.Errorf("Open's error %q quotes the DSN", err)
			}
		})
	}
}

// TestDatabaseDrops: while the database is gone every call fails, soon,
// with an *Error that says what the store was doing and quotes nothing of
// the DSN; once it is back, the same store works again.
func TestDatabaseDrops(t *testing.T) {
	t.Parallel()
	proxy, dsn := pgtest.NewProxy(t, pgtest.Schema(t))
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{OpTimeout: 2 * time.Second, ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.AppendTurn(t.Context(), "s", store.Message{Role: store.RoleUser, Content: "q"}, store.Message{Role: store.RoleAssistant, Content: "a"}))

	proxy.Down()
	calls := map[string]func() error{
		"Record": func() error { _, err := s.Record(t.Context(), "qwen"); return err },
		"UpdateRecord": func() error {
			_, _, err := s.UpdateRecord(t.Context(), "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) { return r, nil, nil })
			return err
		},
		"History": func() error { _, err := s.History(t.Context(), "s", 2); return err },
		"AppendTurn": func() error {
			return s.AppendTurn(t.Context(), "s", store.Message{Role: store.RoleUser}, store.Message{Role: store.RoleAssistant})
		},
		"Pending": func() error { _, _, err := s.Pending(t.Context(), "s"); return err },
		"Wakes":   func() error { _, err := s.Wakes(t.Context(), "qwen"); return err },
	}
	for name, call := range calls {
		began := time.Now()
		err := call()
		var pe *postgres.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s with the database gone: %v, want a *postgres.Error", name, err)
			continue
		}
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("%s with the database gone took %v, want it to fail within the op timeout", name, took)
		}
		if strings.Contains(err.Error(), proxy.Addr()) || strings.Contains(err.Error(), "postgres@") {
			t.Errorf("%s: error %q names the server", name, err)
		}
	}

	proxy.Up()
	// The pool's broken connections are found and replaced on use: within
	// a few calls, and a few seconds, every call works again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, err := s.History(t.Context(), "s", 2)
		if err == nil {
			if len(msgs) != 2 {
				t.Fatalf("History after the database came back = %v, want the stored turn", msgs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("History still fails 10 s after the database came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for name, call := range calls {
		if err := call(); err != nil {
			t.Errorf("%s after the database came back: %v", name, err)
		}
	}
}
