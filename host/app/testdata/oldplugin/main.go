// Command oldplugin is a provider plugin that answers the handshake with
// plugin protocol 2, as every plugin built before protocol 3 (Probe) does:
// it serves Stream (through StreamFromComplete) and no Probe.
package main

import (
	"context"

	"github.com/hashicorp/go-plugin"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

type provider struct{}

func (provider) Complete(context.Context, string, pluginapi.CompletionRequest) (string, error) {
	return "", nil
}

func main() {
	hs := pluginapi.Handshake
	hs.ProtocolVersion = 2
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         map[string]plugin.Plugin{pluginapi.KindProvider: &pluginapi.ProviderPlugin{Impl: provider{}}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
