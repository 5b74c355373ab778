package app

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	openai "github.com/wakeonchat/wakeonchat/plugins/provider-openai"
	"github.com/wakeonchat/wakeonchat/plugins/runpod"
)

// PluginMode is the first argument that makes wakehost serve one of its
// built-in plugins instead of the host: `wakehost plugin NAME`. The host
// launches itself so, as a go-plugin subprocess like any plugin binary.
const PluginMode = "plugin"

// builtins are the plugins built into wakehost, by the names wake.toml
// gives them (the defaults of conductor.plugin, backends[].plugin and
// providers[].plugin), with the body each serves: the one its separate
// binary's main runs.
var builtins = map[string]func(hclog.Logger) error{
	config.DefaultConductorPlugin: conductor.Serve,
	config.DefaultRunPodPlugin:    runpod.Serve,
	config.DefaultProviderPlugin:  openai.Serve,
	config.DefaultCommandPlugin:   command.Serve,
}

// Builtins are the names of the plugins built into wakehost, sorted.
func Builtins() []string { return slices.Sorted(maps.Keys(builtins)) }

// ServePlugin serves the built-in plugin name in this process, the way its
// separate binary does (pluginapi.Main: an invalid configuration is logged
// and exits 1), and returns once the host stopped it. It is what
// `wakehost plugin NAME` runs; nothing may write to standard output before
// it. A name that is not built in is an error, returned before anything is
// served.
func ServePlugin(name string) error {
	serve, ok := builtins[name]
	if !ok {
		return fmt.Errorf("no built-in plugin %q (built in: %q)", name, Builtins())
	}
	pluginapi.Main(serve)
	return nil
}

// pluginCommand is how the plugin name is launched: its file in
// plugins.dir when there is one (a separate binary takes precedence, built
// in or not); else, for a built-in name and a host executable self (""
// when the host has none to offer, as in a test's process), self with the
// arguments "plugin" and name. Otherwise it is the file in plugins.dir,
// whose launch then fails naming the path. builtin says which it chose.
func pluginCommand(c config.Config, name, self string) (path string, args []string, builtin bool) {
	path = c.PluginPath(name)
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return path, nil, false
	}
	if _, ok := builtins[name]; !ok || self == "" {
		return path, nil, false
	}
	return self, []string{PluginMode, name}, true
}
