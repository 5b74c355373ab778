package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Error is a database failure as the host may show it: what the store was
// doing and the class of the failure, never the driver's text, which can
// name the server, the user and the database of the connection string.
// Unwrap gives the driver's error, for errors.Is and errors.As.
type Error struct {
	Op    string // what the store was doing: "read the record of pod qwen"
	Class string // what went wrong, in a few words: "ECONNREFUSED", "SQLSTATE 40P01"
	err   error
}

func (e *Error) Error() string { return "store: " + e.Op + ": PostgreSQL " + e.Class }
func (e *Error) Unwrap() error { return e.err }

// dbErr wraps err, a driver's error, as an *Error about op; nil stays nil.
func dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Op: op, Class: class(err), err: err}
}

// class says in a few words what kind of failure err is, without any of
// its text: the server's SQLSTATE, else the transport's class as the
// plugins name it (pluginapi.ErrorClass: "ECONNREFUSED", "DNS",
// "ETIMEDOUT", "EOF", ...), else whether pgx calls it a connection that
// failed before anything was sent.
func class(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if name, ok := sqlStates[pgErr.Code]; ok {
			return "SQLSTATE " + pgErr.Code + " (" + name + ")"
		}
		return "SQLSTATE " + pgErr.Code
	}
	if c := pluginapi.ErrorClass(err); c != pluginapi.ClassTransport {
		return c
	}
	if pgconn.SafeToRetry(err) {
		return "connection failed"
	}
	return "failure"
}

// sqlStates names the SQLSTATEs an operator is likely to meet.
var sqlStates = map[string]string{
	"28000": "invalid authorization",
	"28P01": "invalid password",
	"3D000": "no such database",
	"3F000": "no such schema",
	"42501": "insufficient privilege",
	"42P01": "no such table",
	"53300": "too many connections",
	"57P01": "the server is shutting down",
	"57P02": "crash shutdown",
	"57P03": "the server is starting up",
	"57014": "statement canceled",
	"40001": "serialization failure",
	"40P01": "deadlock",
	"25006": "read-only transaction",
	"0A000": "feature not supported",
}
