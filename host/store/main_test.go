package store

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests gives Open's check process a program built without the race
// detector and linking package filecheck alone (testdata/checker): under
// -race, starting this test binary again costs some 40 ms of CPU, and even
// without it a program that links the store starts its other packages
// first; the corruption suites open hundreds of damaged files. The check
// itself is the same code either way; wakehost's own use of os.Executable
// is what host/app's TestWakehostRefusesCorruptStore runs.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "store-checker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command("go", "build", "-o", dir, "./testdata/checker").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the store checker: %v\n%s", err, out)
		return 1
	}
	checker := filepath.Join(dir, "checker")
	checkExecutable = func() (string, error) { return checker, nil }
	return m.Run()
}
