package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBuildBinaries(t *testing.T) {
	t.Parallel() // the go command's time: the package's other tests overlap it
	if testing.Short() {
		t.Skip("builds the host and the plugins")
	}
	dir, err := BuildBinaries("./host/internal/e2e/testdata/hello")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{WakehostBin, ConductorBin, ProviderBin, "hello"}
	built := map[string]os.FileInfo{}
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("%s: %v, want an executable", name, err)
		}
		built[name] = fi
	}
	// Built again from the same sources, into the same directory: the go
	// command finds every binary up to date and links none anew (it only
	// touches them); each is the file it was.
	again, err := BuildBinaries("./host/internal/e2e/testdata/hello")
	if err != nil || again != dir {
		t.Fatalf("the second build: %q, %v; want %q again", again, err, dir)
	}
	for _, name := range names {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !os.SameFile(fi, built[name]) {
			t.Errorf("%s after the second build: %v; want the file the first build wrote, not a new one", name, err)
		}
	}
}

// TestBuildBinariesOfAMissingPackage: a package that does not exist fails
// the build.
func TestBuildBinariesOfAMissingPackage(t *testing.T) {
	t.Parallel()
	if _, err := BuildBinaries("./host/internal/e2e/testdata/no-such-command"); err == nil {
		t.Error("BuildBinaries of a missing package: no error")
	}
}
