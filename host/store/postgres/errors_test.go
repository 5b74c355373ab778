package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A failure's class names its kind and never its text: the server's
// SQLSTATE first, then the transport's class as the plugins name it.
func TestClass(t *testing.T) {
	t.Parallel()
	const secret = "postgres://wake:hunter2@db.internal:5432/wake"
	tests := []struct {
		err  error
		want string
	}{
		{&pgconn.PgError{Code: "40P01", Message: secret}, "SQLSTATE 40P01 (deadlock)"},
		{fmt.Errorf("query: %w", &pgconn.PgError{Code: "XX000", Message: secret}), "SQLSTATE XX000"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, "ECONNREFUSED"},
		{&net.DNSError{Name: "db.internal", Err: "no such host"}, "DNS"},
		{fmt.Errorf("%s: %w", secret, context.DeadlineExceeded), "ETIMEDOUT"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), "EOF"},
		{errors.New(secret), "failure"},
	}
	for _, tt := range tests {
		if got := class(tt.err); got != tt.want {
			t.Errorf("class(%v) = %q, want %q", tt.err, got, tt.want)
		}
		e := dbErr("read the record of pod qwen", tt.err)
		if want := "store: read the record of pod qwen: PostgreSQL " + tt.want; e.Error() != want {
			t.Errorf("dbErr(%v) = %q, want %q", tt.err, e.Error(), want)
		}
		if !errors.Is(e, tt.err) {
			t.Errorf("dbErr(%v) does not unwrap to it", tt.err)
		}
	}
}
