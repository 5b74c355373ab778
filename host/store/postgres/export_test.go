package postgres

import "context"

// Version is the schema version s's database is at.
func Version(s *Store) (int, error) {
	var v int
	err := s.pool.QueryRow(context.Background(), `SELECT version FROM wake_schema`).Scan(&v)
	return v, err
}

// Crash stops s as a host that was killed would stop, just after a
// renewal of its leases (the one its background renewal would make next,
// made at once): they are neither renewed nor released after it, its
// connections just close.
func Crash(s *Store) (err error) {
	s.closing.Do(func() {
		s.closed.Store(true)
		s.pruning.Stop()
		s.stopListening()
		s.stopRenewing()
		err = s.renew(context.Background())
		s.pool.Close()
	})
	return err
}

// Stray stores a live hold of name by s that s does not know it holds, as
// a TakeLease whose caller gave up after the database had stored it
// leaves.
func Stray(s *Store, name string) error {
	_, err := s.pool.Exec(context.Background(), `INSERT INTO wake_leases (name, holder, expires, state)
		VALUES ($1, $2, now() + interval '1 hour', 'held')`, name, s.holder)
	return err
}

// ListenPings is how many of the change listener's pings of a quiet
// database it answered.
func ListenPings(s *Store) int64 { return s.listenPings.Load() }
