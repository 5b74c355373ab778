package command

import (
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Serve serves the command plugin from the process's environment (FromEnv)
// until the host stops it. wake-plugin-command's main and wakehost's
// built-in plugin mode both run it. An invalid configuration is its error,
// which names the variable.
func Serve(logger hclog.Logger) error {
	cfg, err := FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	runner, err := New(cfg)
	if err != nil {
		return err
	}
	pluginapi.ServeGPU(runner, logger)
	return nil
}
