package app_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
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

// parallel is how many of the tests run at once unless -parallel says: more
// than the CPUs (go test's default), since they mostly wait, on real-time
// timers, on child processes (wakehost, the plugins, Chromium) and on the
// database, rather than compute.
const parallel = 8

// gcPercent is the test process's GOGC unless GOGC says: its hosts' HTTP
// servers, JSON and 100 KiB turns make much short-lived garbage, and the
// package's tests are bound by the CPU; a larger heap, which the machine
// can spare, takes a tenth off this process's CPU time.
const gcPercent = 400

func run(m *testing.M) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(parallel, runtime.GOMAXPROCS(0))))
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	dir, err := e2e.BuildBinaries("./host/app/testdata/oldplugin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "app e2e tests:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}
