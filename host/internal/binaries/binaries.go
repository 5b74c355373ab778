// Package binaries builds wake-on-chat's executables from source with the go
// command: the host and its two plugins, by the names wake.toml's defaults
// give them, into directories kept between runs (Kept), and asks the go
// command which of the module's packages import a package. The tests and
// the benchmark harness use it; the host itself never does.
package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
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
	return build(ctx, dir, append(slices.Clone(commands), extra...))
}

// BuildHost builds Wakehost alone into dir: the host with its built-in
// plugins, as `go install ./host/cmd/wakehost` gives it, and no plugin
// binary beside it.
func BuildHost(ctx context.Context, dir string) error {
	return build(ctx, dir, commands[:1])
}

// build builds pkgs (paths relative to the module root) into dir with one
// go build.
func build(ctx context.Context, dir string, pkgs []string) error {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return err
	}
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the binaries: %w\n%s", err, out)
	}
	return nil
}

// Importers maps each of pkgs (import paths) to the module's packages whose
// non-test files import it, as one go list reports them.
func Importers(ctx context.Context, pkgs ...string) (map[string][]string, error) {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	importers := make(map[string][]string, len(pkgs))
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		for _, imp := range fields[min(1, len(fields)):] {
			if slices.Contains(pkgs, imp) {
				importers[imp] = append(importers[imp], fields[0])
			}
		}
	}
	return importers, nil
}

// Kept runs build on a directory kept from one run to the next, one per
// module checkout, kind and set of extra strings (the packages built into
// it, say), under an exclusive lock (plugintest.Kept).
func Kept(ctx context.Context, kind string, extra []string, build func(dir string) error) error {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return err
	}
	return plugintest.Kept(kind+"\x00"+root+"\x00"+strings.Join(extra, "\x00"), build)
}
