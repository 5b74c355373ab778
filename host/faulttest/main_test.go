package faulttest

import (
	"fmt"
	"os"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// binDir holds the binaries TestMain builds, builtBins. Each row's hosts
// get a plugin dir (Options.PluginDir) of the row's own with a hard link to
// each of them (env.pluginDir); a row picks its plugins by their file names
// in it.
var binDir string

// The test plugin binaries some rows name; the real ones are
// e2e.ConductorBin and e2e.ProviderBin. e2e.BuildBinaries builds wakehost
// too: the matrix runs the host in process, but a binary that no longer
// builds must fail here as well.
const (
	faultBin      = "faultplugin"  // testdata/faultplugin
	badHandshake  = "badhandshake" // testdata/badhandshake
	testdataPaths = "./host/faulttest/testdata/"
)

// builtBins are the binaries in binDir.
var builtBins = []string{e2e.WakehostBin, e2e.ConductorBin, e2e.ProviderBin, faultBin, badHandshake}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := e2e.BuildBinaries(testdataPaths+faultBin, testdataPaths+badHandshake)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faulttest:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}
