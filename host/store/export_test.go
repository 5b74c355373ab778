package store

import (
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// NoSync is Options.noSync for the external tests (the conformance suite),
// which write thousands of transactions and do not test durability.
func NoSync(o Options) Options {
	o.noSync = true
	return o
}

// PruneHistory deletes all but the last keep messages of session (keep
// rounded down to whole turns), for the tests that want freed pages in a
// file.
func (s *Store) PruneHistory(session string, keep int) error {
	keep = max(keep, 0) &^ 1
	return s.update(context.Background(), func(tx *bolt.Tx) error {
		b, err := messages(tx, session)
		if b == nil || err != nil {
			return err
		}
		var doomed [][]byte
		c := b.Cursor()
		n := 0
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			if n++; n > keep {
				doomed = append(doomed, slices.Clone(k))
			}
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
