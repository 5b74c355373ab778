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
//
// The checker is built while the tests run: the first check waits for it,
// and the test that must run alone (TestHistoryWithinReadsOnlyWhatFits,
// which counts the process's allocations) opens no existing file.
func runTests(m *testing.M) int {
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
