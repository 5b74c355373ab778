package faulttest

import (
	"fmt"
	"os"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// binDir holds the binaries TestMain builds. It is every host's plugin dir
// (Options.PluginDir); a row picks its plugins by their file names in it.
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
