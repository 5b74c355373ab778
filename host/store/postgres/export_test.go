package postgres

import "context"

// Version is the schema version s's database is at.
func Version(s *Store) (int, error) {
	var v int
	err := s.pool.QueryRow(context.Background(), `SELECT version FROM wake_schema`).Scan(&v)
	return v, err
}
