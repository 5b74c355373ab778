package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/internal/binaries"
)

func TestBuildBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the host and the plugins")
	}
	dir, cleanup, err := BuildBinaries("./host/internal/e2e/testdata/hello")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{WakehostBin, ConductorBin, ProviderBin, "hello"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s: %v, want an executable", name, err)
		}
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after cleanup: %v, want %s gone", err, dir)
	}

	if _, _, err := BuildBinaries("./host/internal/e2e/testdata/no-such-command"); err == nil {
		t.Error("BuildBinaries of a missing package: no error")
	}
}

// TestOnlyTestsImport: no package's non-test files import e2e (the
// package's doc promises it), so that test helpers never reach a binary.
func TestOnlyTestsImport(t *testing.T) {
	importers, err := binaries.Importers(context.Background(), "github.com/wakeonchat/wakeonchat/host/internal/e2e")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range importers {
		t.Errorf("%s imports e2e in a non-test file", p)
	}
}
