package runpod

import (
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Serve is the RunPod plugin's body, run by the wake-plugin-runpod binary
// and by wakehost for its built-in plugin of that name
// (pluginapi.Main(runpod.Serve)). It reads its configuration from the
// environment (ConfigFromEnv) and serves a Client as pluginapi.GPU over
// go-plugin gRPC until the host stops it, then returns nil. An invalid
// configuration is returned before anything is served, for the caller to
// log. logger is the plugin's logger (pluginapi.NewLogger).
func Serve(logger hclog.Logger) error {
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	client, err := New(cfg)
	if err != nil {
		return err
	}
	pluginapi.ServeGPU(client, logger)
	return nil
}
