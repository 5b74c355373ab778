package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/config"
)

// A plugin's file in plugins.dir takes precedence; a built-in name with no
// file runs from the host's executable in plugin mode; anything else is the
// file in plugins.dir, whose launch then names it.
func TestPluginCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.DefaultConductorPlugin), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "a-directory"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultConfig()
	cfg.Plugins.Dir = dir
	const self = "/usr/local/bin/wakehost"
	type command struct {
		Path    string
		Args    []string
		Builtin bool
	}
	tests := []struct {
		name, plugin, self string
		want               command
	}{
		{"a built-in name whose file is there", config.DefaultConductorPlugin, self,
			command{Path: filepath.Join(dir, config.DefaultConductorPlugin)}},
		{"a built-in name with no file", config.DefaultProviderPlugin, self,
			command{Path: self, Args: []string{PluginMode, config.DefaultProviderPlugin}, Builtin: true}},
		{"a built-in name with no file and no executable", config.DefaultProviderPlugin, "",
			command{Path: filepath.Join(dir, config.DefaultProviderPlugin)}},
		{"another name with no file", "wake-plugin-other", self,
			command{Path: filepath.Join(dir, "wake-plugin-other")}},
		{"a directory by that name", "a-directory", self,
			command{Path: filepath.Join(dir, "a-directory")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got command
			got.Path, got.Args, got.Builtin = pluginCommand(cfg, tt.plugin, tt.self)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pluginCommand(%q, %q) (-want +got):\n%s", tt.plugin, tt.self, diff)
			}
		})
	}
}

// Every built-in name is a default plugin name of wake.toml's, and the
// defaults are built in: the default config, and a command or RunPod
// backend, start from wakehost alone.
func TestBuiltinsAreTheDefaults(t *testing.T) {
	t.Parallel()
	want := []string{config.DefaultCommandPlugin, config.DefaultConductorPlugin, config.DefaultProviderPlugin, config.DefaultRunPodPlugin}
	if diff := cmp.Diff(want, Builtins()); diff != "" {
		t.Errorf("Builtins (-want +got):\n%s", diff)
	}
	for _, kind := range []string{config.KindConductor, config.KindCommand, config.KindRunPod} {
		if p := config.DefaultBackend(kind).Plugin; !slices.Contains(Builtins(), p) {
			t.Errorf("the default plugin of a %s backend, %q, is not built in", kind, p)
		}
	}
	def := config.DefaultConfig()
	if def.Conductor.Plugin != config.DefaultConductorPlugin || def.Providers[0].Plugin != config.DefaultProviderPlugin {
		t.Errorf("the default plugins %q and %q, want %q and %q", def.Conductor.Plugin, def.Providers[0].Plugin, config.DefaultConductorPlugin, config.DefaultProviderPlugin)
	}
	if err := ServePlugin("wake-plugin-other"); err == nil {
		t.Error("ServePlugin of a name not built in: no error")
	}
}
