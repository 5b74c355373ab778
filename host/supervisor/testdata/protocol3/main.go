// Command protocol3 is a provider plugin built before protocol 4 (Route):
// it answers the handshake with protocol 3 and serves Stream (through
// StreamFromComplete, echoing the last message) and Probe.
package main

import (
	"context"

	"github.com/hashicorp/go-plugin"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

type provider struct{}

func (provider) Complete(_ context.Context, _ string, req pluginapi.CompletionRequest) (string, error) {
	return "echo: " + req.Messages[len(req.Messages)-1].Content, nil
}

func (provider) Probe(context.Context, string) (pluginapi.ProbeResult, error) {
	return pluginapi.ProbeResult{Answered: true, Status: 200}, nil
}

func main() {
	hs := pluginapi.Handshake
	hs.ProtocolVersion = 3
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         map[string]plugin.Plugin{pluginapi.KindProvider: &pluginapi.ProviderPlugin{Impl: provider{}}},
		GRPCServer:      pluginapi.GRPCServer,
	})
}
