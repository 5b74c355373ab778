package postgres_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
)

// schema is pgtest.Schema(t), a fresh schema of t's own, on connections
// that try without TLS first (plainFirst).
func schema(t *testing.T) string {
	t.Helper()
	return plainFirst(pgtest.Schema(t))
}

// plainFirst is dsn with sslmode=allow unless it names an sslmode: a
// connection tries without TLS first, then with it if the server wants
// it. The test server is on loopback, and the TLS handshake of each
// connection (the tests make hundreds) cost the server more than
// anything the store then asks of it.
func plainFirst(dsn string) string { return withDefault(dsn, "sslmode", "allow") }

// withDefault is dsn with the parameter key set to value unless dsn sets
// it: a URL's query parameter, or a key=value string's pair.
func withDefault(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn
		}
		q := u.Query()
		if q.Has(key) {
			return dsn
		}
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	if regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(key) + `\s*=`).MatchString(dsn) {
		return dsn
	}
	return dsn + " " + key + "=" + value
}
