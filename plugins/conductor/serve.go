package conductor

import (
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Serve is the conductor plugin's body, run by the wake-plugin-conductor
// binary and by wakehost for its built-in plugin of that name
// (pluginapi.Main(conductor.Serve)). It reads its configuration from the
// environment (pluginapi.EnvConductorURL, EnvLookupTimeout,
// EnvStartTimeout, EnvWakeToken) and serves a Client as pluginapi.GPU over
// go-plugin gRPC until the host stops it, then returns nil. An invalid
// configuration is returned before anything is served, for the caller to
// log. logger is the plugin's logger (pluginapi.NewLogger).
func Serve(logger hclog.Logger) error {
	cfg := Config{
		URL:    os.Getenv(pluginapi.EnvConductorURL),
		Token:  Token(os.Getenv(pluginapi.EnvWakeToken)),
		Logger: logger,
	}
	var err error
	if cfg.LookupTimeout, err = pluginapi.DurationEnv(pluginapi.EnvLookupTimeout, DefaultLookupTimeout); err != nil {
		return err
	}
	if cfg.StartTimeout, err = pluginapi.DurationEnv(pluginapi.EnvStartTimeout, DefaultStartTimeout); err != nil {
		return err
	}
	client, err := New(cfg)
	if err != nil {
		return err
	}
	pluginapi.ServeGPU(client, logger)
	return nil
}
