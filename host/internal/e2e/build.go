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
	err = keptDir(ctx, "bin", extra, func(root string) error {
		dir = root
		return binaries.Build(ctx, dir, extra...)
	})
	return dir, err
}

// BuildHostAlone builds wakehost alone (binaries.BuildHost: the host with
// its built-in plugins) into a directory that holds nothing else, and
// returns the binary's path. Like [BuildBinaries]' directories, the
// directory is kept from one run to the next, so that a run whose sources
// did not change links nothing; its lock is beside it, not in it.
func BuildHostAlone() (path string, err error) {
	ctx := context.Background()
	err = keptDir(ctx, "host", nil, func(root string) error {
		dir := filepath.Join(root, "alone")
		path = filepath.Join(dir, WakehostBin)
		return binaries.BuildHost(ctx, dir)
	})
	return path, err
}

// keptDir runs build on a directory of the system's temporary directory
// kept from one run to the next, one per module checkout, kind and set of
// extra packages, under an exclusive lock on it.
func keptDir(ctx context.Context, kind string, extra []string, build func(dir string) error) error {
	root, err := binaries.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	key := sha256.Sum256([]byte(root + "\x00" + strings.Join(extra, "\x00")))
	name := "wakeonchat-e2e-" + kind + "-" + hex.EncodeToString(key[:8])
	dir := filepath.Join(os.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	return build(dir)
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
