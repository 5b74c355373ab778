package openai

import (
	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Serve is the provider plugin's body, run by the
// wake-plugin-provider-openai binary and by wakehost for its built-in
// plugin of that name (pluginapi.Main(openai.Serve)). It reads its
// configuration from the environment (pluginapi.EnvAPIKeyEnv and the
// variable it names, EnvCompletionTimeout) and serves a Client as
// pluginapi.Provider over go-plugin gRPC until the host stops it, then
// returns nil. An invalid configuration is returned before anything is
// served, for the caller to log. logger is the plugin's logger
// (pluginapi.NewLogger).
func Serve(logger hclog.Logger) error {
	timeout, err := pluginapi.DurationEnv(pluginapi.EnvCompletionTimeout, DefaultTimeout)
	if err != nil {
		return err
	}
	client, err := New(Config{
		APIKey:  APIKey(pluginapi.APIKeyFromEnv()),
		Timeout: timeout,
		Logger:  logger,
	})
	if err != nil {
		return err
	}
	pluginapi.ServeProvider(client, logger)
	return nil
}
