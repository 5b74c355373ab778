package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wakeonchat/wakeonchat/host/internal/binaries"
)

// The binaries [BuildBinaries] always builds, by the names wake.toml's
// defaults give the plugins.
const (
	WakehostBin  = binaries.Wakehost
	ConductorBin = binaries.Conductor
	ProviderBin  = binaries.Provider
)

// BuildBinaries builds wakehost, the conductor plugin and the provider
// plugin, and every extra package (a path relative to the module root, such
// as "./host/faulttest/testdata/faultplugin"), into a directory of their
// own, with one go build so that the go command builds them in parallel. A
// binary is named after its package's last element.
//
// The directory is kept from one run to the next (in the system's temporary
// directory, one per module checkout and set of packages): the go command
// leaves a binary that is up to date as it is, so a run whose sources did
// not change links nothing, which is most of a build's time. A lock on the
// directory serialises two runs building it at once; the go command
// replaces a changed binary by renaming the new one over it, which leaves a
// process already running the old one alone.
//
// It is meant for TestMain: a suite that runs the host in process still
// builds wakehost, so that a host binary that no longer builds fails it too.
func BuildBinaries(extra ...string) (dir string, err error) {
	ctx := context.Background()
	root, err := binaries.ModuleRoot(ctx)
	if err != nil {
		return "", err
	}
	key := sha256.Sum256([]byte(root + "\x00" + strings.Join(extra, "\x00")))
	dir = filepath.Join(os.TempDir(), "wakeonchat-e2e-bin-"+hex.EncodeToString(key[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := binaries.Build(ctx, dir, extra...); err != nil {
		return "", err
	}
	return dir, nil
}

// lockDir takes an exclusive lock on dir's lock file, waiting for another
// holder, and returns its release.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
