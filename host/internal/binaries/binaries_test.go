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

// Importers finds a package's importers among non-test files: wakebench
// imports this package, and only tests import the OpenAI SDK.
func TestImporters(t *testing.T) {
	ctx := context.Background()
	got, err := Importers(ctx, "github.com/wakeonchat/wakeonchat/host/internal/binaries")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "github.com/wakeonchat/wakeonchat/host/cmd/wakebench") {
		t.Errorf("importers of binaries: %v, want wakebench among them", got)
	}
	if got, err := Importers(ctx, "github.com/openai/openai-go/v3"); err != nil || len(got) != 0 {
		t.Errorf("importers of openai-go outside tests: %v, %v; want none", got, err)
	}
}
