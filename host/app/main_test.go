package app_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binDir holds the binaries TestMain builds: wakehost and the two plugins
// that app.New launches (Options.PluginDir points here).
var binDir string

// The names of the built binaries, as wake.toml's defaults name the plugins.
const (
	wakehostBin  = "wakehost"
	conductorBin = "wake-plugin-conductor"
	providerBin  = "wake-plugin-provider-openai"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "app e2e tests:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "app-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "app e2e tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// One go build for all three: the go command builds them in parallel.
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"./host/cmd/wakehost",
		"./plugins/conductor/cmd/wake-plugin-conductor",
		"./plugins/provider-openai/cmd/wake-plugin-provider-openai",
	)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "app e2e tests: building the binaries:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod), nil
}
