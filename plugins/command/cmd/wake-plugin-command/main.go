// Command wake-plugin-command is the GPU plugin that runs operator-given
// commands to read, start and stop a pod (a container, a systemd unit, a
// cloud VM). wakehost launches it; it is not meant to be run by hand. It
// reads its configuration from the environment (WAKE_COMMAND_START,
// WAKE_COMMAND_STATUS, …: see package command and docs/backends.md) and
// serves pluginapi.GPU over go-plugin gRPC.
package main

import (
	"os"

	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func main() {
	logger := pluginapi.NewLogger()
	cfg, err := command.FromEnv(os.Getenv)
	var runner *command.Runner
	if err == nil {
		cfg.Logger = logger
		runner, err = command.New(cfg)
	}
	if err != nil {
		logger.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	pluginapi.ServeGPU(runner, logger)
}
