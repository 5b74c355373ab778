package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
func runTests(m *testing.M) int {
	// In a directory kept between runs: a checker that is up to date is
	// not linked again.
	var checker string
	err := binaries.Kept(context.Background(), "store-checker", nil, func(dir string) error {
		checker = filepath.Join(dir, "bin", "checker")
		out, err := exec.Command("go", "build", "-o", filepath.Dir(checker)+string(filepath.Separator), "./testdata/checker").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the store checker: %v\n", err)
		return 1
	}
	checkExecutable = func() (string, error) { return checker, nil }
	return m.Run()
}
