// Command wake-plugin-provider-openai is the model-API plugin for
// OpenAI-compatible chat completion servers. wakehost launches it; it is
// not meant to be run by hand. It reads its configuration from the
// environment (see pluginapi: WAKE_API_KEY_ENV and the variable it names,
// WAKE_COMPLETION_TIMEOUT) and serves pluginapi.Provider over go-plugin
// gRPC.
package main

import (
	"os"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	openai "github.com/wakeonchat/wakeonchat/plugins/provider-openai"
)

func main() {
	logger := pluginapi.NewLogger()
	timeout, err := pluginapi.DurationEnv(pluginapi.EnvCompletionTimeout, openai.DefaultTimeout)
	var client *openai.Client
	if err == nil {
		client, err = openai.New(openai.Config{
			APIKey:  openai.APIKey(pluginapi.APIKeyFromEnv()),
			Timeout: timeout,
			Logger:  logger,
		})
	}
	if err != nil {
		logger.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	pluginapi.ServeProvider(client, logger)
}
