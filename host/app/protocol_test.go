package app_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// TestOldProtocolPlugin: a provider plugin built against plugin protocol 2
// (no Probe) stops start-up with an error that names it, both protocols and
// what to do.
func TestOldProtocolPlugin(t *testing.T) {
	t.Parallel()
	a, err, panicked := e2e.NewApp(app.Options{
		ConfigPath: e2e.WriteConfig(t, e2e.Config{StartTimeout: startTimeout, ProviderPlugin: "oldplugin"}),
		Logger:     slog.New(slog.DiscardHandler),
		Getenv:     func(string) string { return "" },
		Clock:      fakeclock.New(t0),
		PluginDir:  binDir,
	})
	if panicked != nil {
		t.Fatalf("app.New panicked: %v", panicked)
	}
	if a != nil {
		a.Shutdown(context.Background())
		t.Fatal("app.New started a host with a protocol 2 provider plugin")
	}
	want := "providers[0].plugin: plugin oldplugin: " + filepath.Join(binDir, "oldplugin") +
		" failed the go-plugin handshake: it speaks plugin protocol 2 and this host speaks protocols 3 to 4: rebuild it against this release's plugins/pluginapi"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("app.New error:\n%v\nwant one starting\n%s", err, want)
	}
}
