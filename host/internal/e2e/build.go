package e2e

import (
	"context"
	"path/filepath"

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
	err = binaries.Kept(ctx, "e2e-bin", extra, func(root string) error {
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
	err = binaries.Kept(ctx, "e2e-host", nil, func(root string) error {
		dir := filepath.Join(root, "alone")
		path = filepath.Join(dir, WakehostBin)
		return binaries.BuildHost(ctx, dir)
	})
	return path, err
}
