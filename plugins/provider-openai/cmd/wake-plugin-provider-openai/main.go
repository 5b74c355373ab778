// Command wake-plugin-provider-openai is the model-API plugin for
// OpenAI-compatible chat completion servers. wakehost launches it; it is
// not meant to be run by hand. It reads its configuration from the
// environment (see pluginapi: WAKE_API_KEY_ENV and the variable it names,
// WAKE_COMPLETION_TIMEOUT) and serves pluginapi.Provider over go-plugin
// gRPC. wakehost carries the same plugin built in (openai.Serve); this
// binary, in plugins.dir, takes its place.
package main

import (
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	openai "github.com/wakeonchat/wakeonchat/plugins/provider-openai"
)

func main() { pluginapi.Main(openai.Serve) }
