package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Kept runs build on a directory of the system's temporary directory that
// is kept from one run to the next, one per key, under an exclusive lock
// on it: the go command leaves a binary that is up to date as it is, so a
// build into it whose sources did not change links nothing, which is most
// of a build's time. The lock serialises two runs building at once; the go
// command replaces a changed binary by renaming the new one over it, which
// leaves a process already running the old one alone. The lock file is in
// the directory: build may put its binaries in a subdirectory that must
// hold nothing else.
func Kept(key string, build func(dir string) error) error {
	sum := sha256.Sum256([]byte(key))
	dir := filepath.Join(os.TempDir(), "wakeonchat-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // which releases the lock
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", dir, err)
	}
	return build(dir)
}

var built sync.Map // package path → func() (string, error)

// Binary builds the command package pkg (as go build takes it, relative to
// the test's directory: "./cmd/wake-plugin-mine"), once in a test process,
// into a directory Kept between runs, and returns the binary's path. The
// binary has no DWARF (-ldflags=-w), which nothing in a test reads, for a
// faster link. A failed build fails t.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	once, _ := built.LoadOrStore(pkg, sync.OnceValues(func() (string, error) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		bin := ""
		err = Kept(wd+"\x00"+pkg, func(dir string) error {
			bin = filepath.Join(dir, filepath.Base(pkg))
			out, err := exec.Command("go", "build", "-ldflags=-w", "-o", bin, pkg).CombinedOutput()
			if err != nil {
				return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
			}
			return nil
		})
		return bin, err
	}))
	bin, err := once.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
