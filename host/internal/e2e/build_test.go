package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	root, err := binaries.ModuleRoot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const self = "github.com/wakeonchat/wakeonchat/host/internal/e2e"
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		for _, imp := range fields[1:] {
			if imp == self {
				t.Errorf("%s imports %s in a non-test file", fields[0], self)
			}
		}
	}
}
