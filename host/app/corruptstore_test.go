package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/store"
)

// TestWakehostRefusesCorruptStore: a wakehost whose wake.db is truncated,
// empty, not a bbolt file or has garbage in its pages exits 1 with one line
// on stderr that names the file and what to do; no crash, no trace.
func TestWakehostRefusesCorruptStore(t *testing.T) {
	t.Parallel()
	good, used := goodStoreFile(t)
	pageSize := os.Getpagesize() // bbolt's page size for a new file
	garbage := func(data []byte, pages ...int) []byte {
		data = bytes.Clone(data)
		r := rand.New(rand.NewPCG(1, 2))
		for _, p := range pages {
			for i := p * pageSize; i < (p+1)*pageSize; i++ {
				data[i] = byte(r.Uint32())
			}
		}
		return data
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated to half a page", good[:pageSize/2]},
		{"truncated mid-file", good[:used/2]},
		{"not a bbolt file", bytes.Repeat([]byte("not a store "), 2*pageSize)},
		{"garbage in pages 2 and 3", garbage(good, 2, 3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			path := filepath.Join(dataDir, "wake.db")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := e2e.WriteConfig(t, e2e.Config{DataDir: dataDir, StartTimeout: startTimeout})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, e2e.WakehostBin), "-config", cfg)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("wakehost on a store %s: %v, want exit status 1\nstderr:\n%s", tc.name, err, stderr.String())
			}
			got := stderr.String()
			if lines := strings.Count(got, "\n"); lines != 1 || !strings.HasSuffix(got, "\n") {
				t.Errorf("wakehost wrote %d lines to stderr, want 1:\n%s", lines, got)
			}
			for _, want := range []string{"wakehost: store " + path + " is corrupt: ", "move the file aside", "restore it from a backup"} {
				if !strings.Contains(got, want) {
					t.Errorf("wakehost's stderr does not say %q:\n%s", want, got)
				}
			}
			for _, crash := range []string{"goroutine", "panic", "fatal error", "SIGBUS", "assertion failed"} {
				if strings.Contains(got, crash) {
					t.Errorf("wakehost's stderr has %q:\n%s", crash, got)
				}
			}
			if stdout.Len() > 0 {
				t.Errorf("wakehost wrote to stdout: %q", stdout.String())
			}
			if data, err := os.ReadFile(path); err != nil || !bytes.Equal(data, tc.data) {
				t.Errorf("wakehost changed the refused store (read error %v)", err)
			}
		})
	}
}

// goodStoreFile returns the bytes of a closed store with some sessions in
// it, spread over enough pages that pages 2 and 3 are in use, and how many
// of its bytes are pages (bbolt grows the file ahead of them).
func goodStoreFile(t *testing.T) (data []byte, used int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wake.db")
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		user := store.Message{Role: store.RoleUser, Content: fmt.Sprintf("question %d", i)}
		reply := store.Message{Role: store.RoleAssistant, Content: strings.Repeat("an answer ", 50)}
		if err := s.AppendTurn(t.Context(), fmt.Sprintf("session-%03d", i), user, reply); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error { used = int(tx.Size()); return nil })
	if data, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	return data, used
}
