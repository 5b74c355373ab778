package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/wakeonchat/wakeonchat/host/store/internal/filecheck"
)

// benchStore writes a store of sessions two-turn sessions, each message
// msgBytes long, and returns its path and size.
func benchStore(b *testing.B, sessions, msgBytes int) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "wake.db")
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("x", msgBytes)
	for i := range sessions {
		session := fmt.Sprintf("session-%05d", i)
		for range 2 {
			if err := s.AppendTurn(b.Context(), session, Message{RoleUser, text}, Message{RoleAssistant, text}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, fi.Size()
}

// BenchmarkOpen is what the check at open costs: Open (check and open),
// against bbolt's own open of the same file, on a store of a few MiB.
// make bench does not run it: go test -run '^$' -bench Open ./host/store/
func BenchmarkOpen(b *testing.B) {
	path, size := benchStore(b, 600, 400)
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	var used int64
	db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	db.Close()
	b.Logf("store file of %.1f MiB, %.1f MiB of it in pages", float64(size)/(1<<20), float64(used)/(1<<20))
	b.Run("store.Open", func(b *testing.B) {
		for b.Loop() {
			s, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	b.Run("bbolt.Open", func(b *testing.B) {
		for b.Loop() {
			db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if err := verify(path, lockTimeout); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checkFile", func(b *testing.B) { // verify's child, in this process
		for b.Loop() {
			if err := filecheck.File(path, filecheck.LockTimeout); err != nil {
				b.Fatal(err)
			}
		}
	})
}
