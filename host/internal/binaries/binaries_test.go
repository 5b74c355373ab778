package binaries

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gomod), "module github.com/wakeonchat/wakeonchat\n") {
		t.Errorf("%s/go.mod is not the wakeonchat module's", root)
	}
}

// Only tests import the packages of test support and the OpenAI SDK
// (which tests use as a client), checked with one go list for them all:
// wakebench, a command, imports this package, so Importers finds a
// non-test importer where there is one.
func TestOnlyTestsImport(t *testing.T) {
	const mod = "github.com/wakeonchat/wakeonchat/"
	testOnly := []string{
		mod + "host/internal/browser",
		mod + "host/internal/e2e",
		"github.com/openai/openai-go/v3",
	}
	got, err := Importers(context.Background(), append(testOnly, mod+"host/internal/binaries")...)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got[mod+"host/internal/binaries"], mod+"host/cmd/wakebench") {
		t.Errorf("importers of binaries: %v, want wakebench among them", got[mod+"host/internal/binaries"])
	}
	for _, pkg := range testOnly {
		for _, p := range got[pkg] {
			t.Errorf("%s imports %s in a non-test file", p, pkg)
		}
	}
}
