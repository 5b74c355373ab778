package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's versions: migrations[i] takes a database at
// version i to version i+1. A released migration is never edited; a change
// is a new one appended. The version a database is at lives in
// wake_schema.
var migrations = []string{
	// 1: records, sessions and their messages, pending markers, leases.
	`
CREATE TABLE wake_pods (
	pod    text PRIMARY KEY,
	record jsonb -- NULL: no record stored; the row exists to be locked
);
CREATE TABLE wake_sessions (
	session   text PRIMARY KEY,
	last_turn timestamptz NOT NULL,
	next_seq  bigint NOT NULL
);
CREATE INDEX wake_sessions_last_turn ON wake_sessions (last_turn, session);
CREATE TABLE wake_messages (
	session text NOT NULL REFERENCES wake_sessions ON DELETE CASCADE,
	seq     bigint NOT NULL,
	role    text NOT NULL,
	content bytea NOT NULL, -- bytes: a message may hold NUL, which text refuses
	PRIMARY KEY (session, seq)
);
CREATE TABLE wake_pending (
	session    text PRIMARY KEY,
	marker     jsonb NOT NULL,
	created_at timestamptz NOT NULL
);
CREATE INDEX wake_pending_created_at ON wake_pending (created_at);
-- Unlogged: a lease is worth nothing after the database restarts (every
-- one has lapsed by then), and taking and giving one up per turn must not
-- wait for the disk.
CREATE UNLOGGED TABLE wake_leases (
	name    text PRIMARY KEY,
	holder  text NOT NULL,
	expires timestamptz NOT NULL,
	state   text NOT NULL -- held; or finishing: a turn replied to, storing itself
);
CREATE INDEX wake_leases_holder ON wake_leases (holder);
`,
	// 2: each pod's wake log (store.WakeLog), written with its record.
	`
CREATE TABLE wake_wakes (
	pod       text NOT NULL,
	requested bigint NOT NULL, -- the wake's request time in Unix nanoseconds: which wake it is
	wake      jsonb NOT NULL,  -- a machines.Wake
	PRIMARY KEY (pod, requested)
);
`,
}

// SchemaVersion is the version of the schema this host writes.
var SchemaVersion = len(migrations)

// SchemaTooNewError is Open's error for a database a newer host migrated:
// this one would not know what the newer tables mean.
type SchemaTooNewError struct {
	Schema   string // the schema the tables are in
	Version  int    // the database's
	Supports int    // this host's, SchemaVersion
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("store: the PostgreSQL schema %q is at version %d, newer than this host's %d: "+
		"run a host at least as new as the one that migrated it", e.Schema, e.Version, e.Supports)
}

// migrate brings the schema to SchemaVersion in one transaction, under a
// lock that serialises the replicas starting at once, and notes the
// schema's name.
func (s *Store) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// current_schema() is NULL when no schema search_path names
		// exists.
		var schema *string
		var path string
		if err := tx.QueryRow(ctx, `SELECT current_schema(), current_setting('search_path')`).Scan(&schema, &path); err != nil {
			return dbErr("read the current schema", err)
		}
		if schema == nil || *schema == "" {
			return fmt.Errorf("store: the schema search_path names does not exist (search_path: %s): "+
				"create it (CREATE SCHEMA), or set search_path to one that exists", path)
		}
		s.schema = *schema
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.wake_schema'))`); err != nil {
			return dbErr("lock the schema", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS wake_schema (version int NOT NULL)`); err != nil {
			return dbErr("create wake_schema", err)
		}
		var version int
		err := tx.QueryRow(ctx, `SELECT version FROM wake_schema`).Scan(&version)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := tx.Exec(ctx, `INSERT INTO wake_schema (version) VALUES (0)`); err != nil {
				return dbErr("initialise wake_schema", err)
			}
		case err != nil:
			return dbErr("read the schema version", err)
		}
		if version > SchemaVersion {
			return &SchemaTooNewError{Schema: s.schema, Version: version, Supports: SchemaVersion}
		}
		for v := version; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return dbErr(fmt.Sprintf("migrate the schema to version %d", v+1), err)
			}
		}
		if version < SchemaVersion {
			if _, err := tx.Exec(ctx, `UPDATE wake_schema SET version = $1`, SchemaVersion); err != nil {
				return dbErr("note the schema version", err)
			}
		}
		return nil
	})
}
