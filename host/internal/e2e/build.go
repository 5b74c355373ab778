package e2e

import (
	"context"
	"os"

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
// as "./host/faulttest/testdata/faultplugin"), into a fresh temporary
// directory, with one go build so that the go command builds them in
// parallel. A binary is named after its package's last element. cleanup
// removes the directory; on error there is nothing to clean up.
//
// It is meant for TestMain: a suite that runs the host in process still
// builds wakehost, so that a host binary that no longer builds fails it too.
func BuildBinaries(extra ...string) (dir string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", "e2e-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if err := binaries.Build(context.Background(), dir, extra...); err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}
