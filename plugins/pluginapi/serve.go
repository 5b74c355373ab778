package pluginapi

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// NewLogger returns the logger a plugin should use: hclog JSON lines on the
// process's standard error, from the level the host keeps (EnvLogLevel;
// Debug when it is unset or not a level). go-plugin forwards each line to
// the host's logger at the line's own level. Call it before ServeGPU or
// ServeProvider: Serve redirects os.Stderr, and a logger made afterwards
// would write into that redirect instead.
//
// A plugin must never print to standard output: it carries the handshake.
func NewLogger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv(EnvLogLevel))
	if level == hclog.NoLevel {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{
		Level:      level,
		Output:     os.Stderr,
		JSONFormat: true,
	})
}

// ServeGPU serves impl as a GPU plugin and returns when the host kills the
// plugin. logger is the plugin's logger (see NewLogger); nil means
// NewLogger(). It must be the last thing main does.
func ServeGPU(impl GPU, logger hclog.Logger) {
	Serve(map[string]plugin.Plugin{KindGPU: &GPUPlugin{Impl: impl}}, logger)
}

// ServeProvider serves impl as a Provider plugin, like ServeGPU.
func ServeProvider(impl Provider, logger hclog.Logger) {
	Serve(map[string]plugin.Plugin{KindProvider: &ProviderPlugin{Impl: impl}}, logger)
}

// Serve serves plugins (entries of PluginMap with Impl set) the way every
// wake-on-chat plugin is served, and returns when the host stops the
// plugin: the Handshake, gRPC with messages of up to MaxMessageBytes
// (GRPCServer), and SIGINT and SIGTERM ignored while the host lives.
// ServeGPU and ServeProvider call it; a binary that serves both kinds
// calls it directly. nil logger means NewLogger().
func Serve(plugins map[string]plugin.Plugin, logger hclog.Logger) {
	if logger == nil {
		logger = NewLogger()
	}
	outliveHostSignals(logger)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugins,
		GRPCServer:      GRPCServer,
		Logger:          logger,
	})
}

// outliveHostSignals makes the plugin ignore SIGINT and SIGTERM while the
// process that launched it (the host) lives, and exit on them once it is
// gone. A service manager's stop (systemd signals every process of the
// unit, a terminal's Ctrl-C the whole process group) would otherwise kill
// the plugins at once and fail the turns the host is letting finish; the
// host stops its plugins itself once its turns are done, and on Linux the
// kernel kills them if the host dies. Serve calls it.
func outliveHostSignals(logger hclog.Logger) {
	host := os.Getppid()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range ch {
			if os.Getppid() != host {
				logger.Warn("signal received and the host is gone: exiting", "signal", sig.String())
				os.Exit(1)
			}
			logger.Debug("signal ignored: the host stops this plugin when its turns are done", "signal", sig.String())
		}
	}()
}
