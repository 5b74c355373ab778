package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/config"
)

// TestWriteConfig: what WriteConfig writes loads, and holds what was set;
// what was not set keeps wake.toml's default, but for api_key_env.
func TestWriteConfig(t *testing.T) {
	dataDir := t.TempDir()
	c, err := config.Load(WriteConfig(t, Config{
		DataDir:           dataDir,
		AdminListen:       "127.0.0.1:0",
		EventsKeepalive:   40 * time.Millisecond,
		ConductorPlugin:   "gpu-plugin",
		ConductorURL:      "http://127.0.0.1:9",
		LookupTimeout:     300 * time.Millisecond,
		StartTimeout:      200 * time.Millisecond,
		CompletionTimeout: 500 * time.Millisecond,
		ProviderPlugin:    "llm-plugin",
		APIKeyEnv:         "SOME_KEY",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:0" || c.DataDir() != dataDir || c.Server.AdminListen != "127.0.0.1:0" {
		t.Errorf("[server] listen %q, data dir %q, admin_listen %q; want 127.0.0.1:0, %q and 127.0.0.1:0",
			c.Server.Listen, c.DataDir(), c.Server.AdminListen, dataDir)
	}
	if got := c.Server.EventsKeepalive.Duration; got != 40*time.Millisecond {
		t.Errorf("events_keepalive %v, want 40ms", got)
	}
	wantConductor := config.Conductor{
		Plugin: "gpu-plugin", URL: "http://127.0.0.1:9",
		LookupTimeout: config.Duration{Duration: 300 * time.Millisecond},
		StartTimeout:  config.Duration{Duration: 200 * time.Millisecond},
	}
	if diff := cmp.Diff(wantConductor, c.Conductor); diff != "" {
		t.Errorf("[conductor] (-want +got):\n%s", diff)
	}
	if got := c.Timings.CompletionTimeout.Duration; got != 500*time.Millisecond {
		t.Errorf("completion_timeout %v, want 500ms", got)
	}
	wantProvider := config.DefaultProvider()
	wantProvider.Name, wantProvider.Plugin, wantProvider.Pod, wantProvider.Model, wantProvider.APIKeyEnv = "qwen", "llm-plugin", "qwen", "qwen", "SOME_KEY"
	if diff := cmp.Diff([]config.Provider{wantProvider}, c.Providers); diff != "" {
		t.Errorf("[[providers]] (-want +got):\n%s", diff)
	}
}

func TestWriteConfigDefaults(t *testing.T) {
	path := WriteConfig(t, Config{})
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	def := config.DefaultConfig()
	if diff := cmp.Diff(def.Conductor, c.Conductor); diff != "" {
		t.Errorf("[conductor] of a zero Config (-default +got):\n%s", diff)
	}
	if diff := cmp.Diff(def.Timings, c.Timings); diff != "" {
		t.Errorf("[timings] of a zero Config (-default +got):\n%s", diff)
	}
	if c.Server.AdminListen != "" {
		t.Errorf("admin_listen %q of a zero Config, want none", c.Server.AdminListen)
	}
	if want := filepath.Join(filepath.Dir(path), "data"); c.DataDir() != want {
		t.Errorf("data dir %q, want %q", c.DataDir(), want)
	}
	if len(c.Providers) != 1 || c.Providers[0].APIKeyEnv != "" || c.Providers[0].Plugin != config.DefaultProviderPlugin {
		t.Errorf("providers %+v, want qwen with no api_key_env and the default plugin", c.Providers)
	}
	if _, err := os.Stat(c.DataDir()); !os.IsNotExist(err) {
		t.Errorf("WriteConfig made the data dir (%v); the host makes it", err)
	}
}
