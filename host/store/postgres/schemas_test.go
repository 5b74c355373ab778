package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
)

// schemaPool hands the conformance cases their schemas: each made and
// migrated once (by the first store opened on it), then emptied for the
// next case once the stores of the one that had it are closed. A schema
// made, migrated and dropped for each case was most of the database's
// work in the suite; emptying one is a few DELETEs.
type schemaPool struct {
	admin *pgxpool.Pool // on the test server: empties the schemas

	mu    sync.Mutex
	free  []string       // the DSNs of the emptied schemas no case has
	drops []func() error // of every schema made
}

// newSchemaPool returns a pool whose schemas are dropped at t's cleanup,
// once every case of the suite has ended.
func newSchemaPool(t *testing.T) *schemaPool {
	t.Helper()
	pgtest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgxpool.New(ctx, pgtest.ForTests(pgtest.ServerDSN()))
	if err != nil {
		t.Fatal(err)
	}
	p := &schemaPool{admin: admin}
	t.Cleanup(func() {
		admin.Close()
		for _, drop := range p.drops {
			if err := drop(); err != nil {
				t.Error(err)
			}
		}
	})
	return p
}

// get returns the DSN of an empty schema that is t's alone until t's
// cleanup, which empties it and gives it back once the stores t opened on
// it have closed (their cleanups, registered later, run first). Its
// sessions commit without waiting for the disk, as pgtest.Schema's.
func (p *schemaPool) get(t *testing.T) string {
	t.Helper()
	p.mu.Lock()
	var dsn string
	if n := len(p.free); n > 0 {
		dsn, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if dsn == "" {
		made, drop, err := pgtest.NewSchema(context.Background(), "wake_test_")
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		p.drops = append(p.drops, drop)
		p.mu.Unlock()
		dsn = pgtest.ForTests(made)
	}
	t.Cleanup(func() {
		if err := p.empty(dsn); err != nil {
			t.Errorf("emptying the case's schema for the next: %v", err)
			return
		}
		p.mu.Lock()
		p.free = append(p.free, dsn)
		p.mu.Unlock()
	})
	return dsn
}

// empty deletes every row of every table in dsn's schema but
// wake_schema, whose version stays: the schema is as a store leaves a new
// one it migrated.
func (p *schemaPool) empty(dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	schema := cfg.RuntimeParams["search_path"]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := p.admin.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'wake_schema'`, schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	var sql strings.Builder
	for _, table := range tables {
		fmt.Fprintf(&sql, "DELETE FROM %s;", pgx.Identifier{schema, table}.Sanitize())
	}
	if sql.Len() == 0 {
		return nil // not migrated: no store opened on it
	}
	_, err = p.admin.Exec(ctx, sql.String())
	return err
}
