package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The binaries [BuildBinaries] always builds, by the names wake.toml's
// defaults give the plugins.
const (
	WakehostBin  = "wakehost"
	ConductorBin = "wake-plugin-conductor"
	ProviderBin  = "wake-plugin-provider-openai"
)

// commands are the packages of WakehostBin, ConductorBin and ProviderBin,
// relative to the module root.
var commands = []string{
	"./host/cmd/wakehost",
	"./plugins/conductor/cmd/wake-plugin-conductor",
	"./plugins/provider-openai/cmd/wake-plugin-provider-openai",
}

// ModuleRoot is the directory of the module's go.mod, as the go command
// finds it from the working directory.
func ModuleRoot() (string, error) {
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

// BuildBinaries builds wakehost, the conductor plugin and the provider
// plugin, and every extra package (a path relative to the module root, such
// as "./host/faulttest/testdata/faultplugin"), into a fresh temporary
// directory, with one go build so that the go command builds them in
// parallel. A binary is named after its package's last element. cleanup
// removes the directory; on error there is nothing to clean up.
//
// It is meant for TestMain: a suite that runs the host in process still
// builds wakehost, so that a host binary that no longer builds fails it too.
func BuildBinaries(extra ...string) (dir string, cleanup func(), err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp("", "e2e-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, commands...)
	cmd := exec.Command("go", append(args, extra...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building the binaries: %w\n%s", err, out)
	}
	return dir, cleanup, nil
}
