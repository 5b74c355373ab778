// Command wake-plugin-runpod is the GPU plugin for pods on RunPod, over
// RunPod's REST API v2. wakehost launches it (or serves the same plugin
// built in); it is not meant to be run by hand. It reads its configuration
// from the environment (see package runpod: WAKE_RUNPOD_API_KEY_ENV and
// the variable it names, WAKE_RUNPOD_URL, WAKE_RUNPOD_PORT,
// WAKE_RUNPOD_PROXY_URL, WAKE_RUNPOD_PODS, WAKE_LOOKUP_TIMEOUT,
// WAKE_START_TIMEOUT) and serves pluginapi.GPU over go-plugin gRPC.
package main

import (
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/runpod"
)

func main() { pluginapi.Main(runpod.Serve) }
