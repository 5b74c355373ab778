package faulttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binDir holds the binaries TestMain builds. It is every host's plugin dir
// (Options.PluginDir); a row picks its plugins by their file names in it.
var binDir string

// The plugin binaries the rows name. TestMain builds wakehost too: the
// matrix runs the host in process, but a binary that no longer builds must
// fail here as well.
const (
	conductorBin  = "wake-plugin-conductor"
	providerBin   = "wake-plugin-provider-openai"
	faultBin      = "faultplugin"  // testdata/faultplugin
	badHandshake  = "badhandshake" // testdata/badhandshake
	testdataPaths = "./host/faulttest/testdata/"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faulttest:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "faulttest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faulttest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// One go build for all: the go command builds them in parallel.
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"./host/cmd/wakehost",
		"./plugins/conductor/cmd/wake-plugin-conductor",
		"./plugins/provider-openai/cmd/wake-plugin-provider-openai",
		testdataPaths+faultBin,
		testdataPaths+badHandshake,
	)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "faulttest: building the binaries:", err)
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
