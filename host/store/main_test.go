package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/binaries"
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests gives Open's check process a program built without the race
// detector and linking package filecheck alone (testdata/checker): under
// -race, starting this test binary again costs some 40 ms of CPU, and even
// without it a program that links the store starts its other packages
// first; the corruption suites open hundreds of damaged files. The check
// itself is the same code either way; wakehost's own use of os.Executable
// is what host/app's TestWakehostRefusesCorruptStore runs.
//
// The checker is built while the tests run: the first check waits for it.
func runTests(m *testing.M) int {
	if alone() {
		return m.Run() // one test, which opens no existing file
	}
	built := make(chan struct{})
	var checker string
	var buildErr error
	go func() {
		defer close(built)
		// In a directory kept between runs: a checker that is up to date
		// is not linked again.
		buildErr = binaries.Kept(context.Background(), "store-checker", nil, func(dir string) error {
			checker = filepath.Join(dir, "bin", "checker")
			out, err := exec.Command("go", "build", "-o", filepath.Dir(checker)+string(filepath.Separator), "./testdata/checker").CombinedOutput()
			if err != nil {
				return fmt.Errorf("%w\n%s", err, out)
			}
			return nil
		})
		if buildErr != nil {
			buildErr = fmt.Errorf("building the store checker: %w", buildErr)
			fmt.Fprintln(os.Stderr, buildErr)
		}
	}()
	checkExecutable = func() (string, error) {
		<-built
		return checker, buildErr
	}
	code := m.Run()
	<-built
	if buildErr != nil {
		return 1
	}
	return code
}

// aloneEnv names, in the environment of a process runAlone started, the
// one test it runs.
const aloneEnv = "WAKEONCHAT_STORE_TEST_ALONE"

// alone reports whether this process is one runAlone started.
func alone() bool { return os.Getenv(aloneEnv) != "" }

// runAlone runs t, a test that must have the process to itself (it counts
// the process's allocations), in a new process of this test binary that
// runs t alone, and fails t with that process's output when t fails
// there; under -test.v, t logs it.
func runAlone(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), aloneEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s, run alone: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" (") {
		t.Fatalf("%s, run alone, did not pass:\n%s", t.Name(), out)
	}
	if testing.Verbose() {
		t.Logf("%s, run alone:\n%s", t.Name(), out)
	}
}
