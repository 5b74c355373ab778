// Command wake-plugin-conductor is the GPU plugin for the rig conductor.
// wakehost launches it; it is not meant to be run by hand. It reads its
// configuration from the environment (see pluginapi: WAKE_CONDUCTOR_URL,
// WAKE_LOOKUP_TIMEOUT, WAKE_START_TIMEOUT, RIG_WAKE_TOKEN) and serves
// pluginapi.GPU over go-plugin gRPC.
package main

import (
	"os"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func main() {
	logger := pluginapi.NewLogger()
	cfg := conductor.Config{
		URL:    os.Getenv(pluginapi.EnvConductorURL),
		Token:  conductor.Token(os.Getenv(pluginapi.EnvWakeToken)),
		Logger: logger,
	}
	var err error
	if cfg.LookupTimeout, err = pluginapi.DurationEnv(pluginapi.EnvLookupTimeout, conductor.DefaultLookupTimeout); err == nil {
		cfg.StartTimeout, err = pluginapi.DurationEnv(pluginapi.EnvStartTimeout, conductor.DefaultStartTimeout)
	}
	var client *conductor.Client
	if err == nil {
		client, err = conductor.New(cfg)
	}
	if err != nil {
		logger.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	pluginapi.ServeGPU(client, logger)
}
