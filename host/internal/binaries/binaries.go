// Package binaries builds wake-on-chat's executables from source with the go
// command: the host and its two plugins, by the names wake.toml's defaults
// give them. The end-to-end tests and the benchmark harness use it; the
// host itself never does.
package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The executables Build always builds.
const (
	Wakehost  = "wakehost"
	Conductor = "wake-plugin-conductor"
	Provider  = "wake-plugin-provider-openai"
)

// commands are the packages of Wakehost, Conductor and Provider, relative
// to the module root.
var commands = []string{
	"./host/cmd/wakehost",
	"./plugins/conductor/cmd/wake-plugin-conductor",
	"./plugins/provider-openai/cmd/wake-plugin-provider-openai",
}

// ModuleRoot is the directory of the module's go.mod, as the go command
// finds it from the working directory.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the module (run from the repository)")
	}
	return filepath.Dir(gomod), nil
}

// Build builds Wakehost, Conductor, Provider and every extra package (a
// path relative to the module root) into dir, with one go build so that the
// go command builds them in parallel. A binary is named after its package's
// last element.
func Build(ctx context.Context, dir string, extra ...string) error {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return err
	}
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, commands...)
	cmd := exec.CommandContext(ctx, "go", append(args, extra...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the binaries: %w\n%s", err, out)
	}
	return nil
}
