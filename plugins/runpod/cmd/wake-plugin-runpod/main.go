// Command wake-plugin-runpod is the GPU plugin for pods on RunPod, over
// RunPod's REST API v2. wakehost launches it; it is not meant to be run by
// hand. It reads its configuration from the environment (see package
// runpod: WAKE_RUNPOD_API_KEY_ENV and the variable it names,
// WAKE_RUNPOD_URL, WAKE_RUNPOD_PORT, WAKE_RUNPOD_PROXY_URL,
// WAKE_RUNPOD_PODS, WAKE_LOOKUP_TIMEOUT, WAKE_START_TIMEOUT) and serves
// pluginapi.GPU over go-plugin gRPC.
package main

import (
	"os"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/runpod"
)

func main() {
	logger := pluginapi.NewLogger()
	cfg, err := runpod.ConfigFromEnv(os.Getenv)
	var client *runpod.Client
	if err == nil {
		cfg.Logger = logger
		client, err = runpod.New(cfg)
	}
	if err != nil {
		logger.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	pluginapi.ServeGPU(client, logger)
}
