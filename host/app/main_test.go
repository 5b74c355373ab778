package app_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// binDir holds the binaries TestMain builds: wakehost and the two plugins
// that app.New launches (Options.PluginDir points here).
var binDir string

func TestMain(m *testing.M) {
	if addr := os.Getenv(modelProcessEnv); addr != "" {
		os.Exit(serveModelProcess(addr)) // this binary as a command backend's model
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := e2e.BuildBinaries("./host/app/testdata/oldplugin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "app e2e tests:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}
