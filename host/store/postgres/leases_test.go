package postgres_test

import (
	"log/slog"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
	"github.com/wakeonchat/wakeonchat/host/store/postgres"
)

// TestStrayLeaseIsTakenBack: a hold of this store's that it does not know
// it holds (a take whose caller gave up after the database stored it)
// refuses the other replicas as any live hold does, and is this store's
// to take again at once, not after it expires; a hold it knows it has
// is not taken twice.
func TestStrayLeaseIsTakenBack(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	quiet := postgres.Options{Logger: slog.New(slog.DiscardHandler)}
	a, b := openAt(t, dsn, quiet), openAt(t, dsn, quiet)
	if err := postgres.Stray(a, "turn/s"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		who  string
		s    *postgres.Store
		want bool
	}{
		{"B, while A's stray hold lives", b, false},
		{"A, whose stray it is", a, true},
		{"A again, now that it holds it", a, false},
		{"B, while A holds it", b, false},
	} {
		if got, err := c.s.TakeLease(t.Context(), "turn/s"); err != nil || got != c.want {
			t.Errorf("TakeLease by %s = %v, %v; want %v", c.who, got, err, c.want)
		}
	}
	if !a.LeaseHeld("turn/s") {
		t.Error("A does not know it holds the lease it took back")
	}
}
