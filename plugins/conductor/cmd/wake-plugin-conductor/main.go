// Command wake-plugin-conductor is the GPU plugin for the rig conductor.
// wakehost launches it; it is not meant to be run by hand. It reads its
// configuration from the environment (see pluginapi: WAKE_CONDUCTOR_URL,
// WAKE_LOOKUP_TIMEOUT, WAKE_START_TIMEOUT, RIG_WAKE_TOKEN) and serves
// pluginapi.GPU over go-plugin gRPC. wakehost carries the same plugin
// built in (conductor.Serve); this binary, in plugins.dir, takes its place.
package main

import (
	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func main() { pluginapi.Main(conductor.Serve) }
