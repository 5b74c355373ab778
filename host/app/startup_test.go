package app_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// TestMissingPluginBinary: app.New fails with an error naming the missing
// plugin's path, for the conductor plugin and for a provider plugin, and
// hands back no App.
func TestMissingPluginBinary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		present []string // binaries put into the plugin dir
		missing string
	}{
		{"conductor", nil, e2e.ConductorBin},
		{"provider", []string{e2e.ConductorBin}, e2e.ProviderBin},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range tc.present {
				if err := os.Symlink(filepath.Join(binDir, name), filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			a, err, panicked := e2e.NewApp(app.Options{
				ConfigPath: writeConfig(t, hostOptions{}),
				Logger:     slog.New(slog.DiscardHandler),
				Getenv:     func(string) string { return "" },
				Clock:      fakeclock.New(t0),
				PluginDir:  dir,
			})
			if panicked != nil {
				t.Fatalf("app.New panicked instead of returning its error: %v", panicked)
			}
			if a != nil {
				t.Cleanup(func() { a.Shutdown(context.Background()) })
			}
			path := filepath.Join(dir, tc.missing)
			if err == nil || a != nil {
				t.Fatalf("app.New with %s missing: app %v, error %v; want no app and an error", path, a, err)
			}
			if !strings.Contains(err.Error(), path) || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("app.New: %v\nwant an fs.ErrNotExist naming %s", err, path)
			}
		})
	}
}

// TestWakehostMissingPlugin: the wakehost binary exits 1 and names the
// missing plugin's path on stderr, for a plugin name it has not built in
// (the default names run from wakehost itself:
// host/cmd/wakehost's TestBuiltinPluginsServeAWake).
func TestWakehostMissingPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const missing = "wake-plugin-missing"
	cfg := e2e.WriteConfig(t, e2e.Config{StartTimeout: startTimeout, ConductorPlugin: missing})
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("\n[plugins]\ndir = \""+filepath.ToSlash(dir)+"\"\n")...)
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, e2e.WakehostBin), "-config", cfg, "-log-format", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("wakehost with no plugins: %v, want exit status 1\nstderr:\n%s", err, stderr.String())
	}
	if path := filepath.Join(dir, missing); !strings.Contains(stderr.String(), path) {
		t.Errorf("wakehost stderr does not name %s:\n%s", path, stderr.String())
	}
}

// TestBusyListenAddress: a listen address already taken stops app.New
// with an error naming where the address came from: the key
// server.listen, or the -listen flag (Options.Listen) that overrides it.
func TestBusyListenAddress(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	addr := busy.Addr().String()
	fromFile := writeConfig(t, hostOptions{})
	text, err := os.ReadFile(fromFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fromFile, bytes.Replace(text, []byte(`listen = "127.0.0.1:0"`), []byte(`listen = "`+addr+`"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, config, listen, want string
	}{
		{"from the file", fromFile, "", "server.listen: listen tcp " + addr + ": "},
		{"from -listen", writeConfig(t, hostOptions{}), addr, "-listen: listen tcp " + addr + ": "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err, panicked := e2e.NewApp(app.Options{
				ConfigPath: tc.config,
				Listen:     tc.listen,
				Logger:     slog.New(slog.DiscardHandler),
				Getenv:     func(string) string { return "" },
				Clock:      fakeclock.New(t0),
				PluginDir:  binDir,
			})
			if a != nil {
				a.Shutdown(context.Background())
			}
			if panicked != nil || a != nil || err == nil {
				t.Fatalf("app.New: app %v, error %v, panic %v; want an error", a, err, panicked)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("app.New: %q, want it to start %q", err, tc.want)
			}
		})
	}
}
