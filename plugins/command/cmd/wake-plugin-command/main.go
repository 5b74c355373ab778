// Command wake-plugin-command is the GPU plugin that runs operator-given
// commands to read, start and stop a pod (a container, a systemd unit, a
// cloud VM). wakehost launches it, or serves it built in; it is not meant
// to be run by hand. It reads its configuration from the environment
// (WAKE_COMMAND_START, WAKE_COMMAND_STATUS, …: see package command and
// docs/backends.md) and serves pluginapi.GPU over go-plugin gRPC.
package main

import (
	"github.com/wakeonchat/wakeonchat/plugins/command"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func main() { pluginapi.Main(command.Serve) }
