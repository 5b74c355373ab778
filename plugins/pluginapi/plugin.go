package pluginapi

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/wakeonchat/wakeonchat/plugins/pluginapi/proto"
)

// ProtocolVersion is the plugin protocol this package speaks. Protocol 2
// replaced the Provider's Complete call with Stream; protocol 3 added the
// Provider's Probe; protocol 4 added the Provider's Route, with which the
// host sends an OpenAI-compatible model's completions itself. The host
// also takes a plugin of MinProtocolVersion or later (VersionedPlugins):
// its completions go through its Stream. A plugin built against an
// earlier protocol fails the host's handshake.
const ProtocolVersion = 4

// MinProtocolVersion is the earliest protocol the host still serves.
const MinProtocolVersion = 3

// Handshake is the go-plugin handshake every wake-on-chat plugin answers.
// ProtocolVersion changes only when the proto changes incompatibly; the
// cookie only tells a binary that it was launched as a plugin (it is not a
// secret and not a security measure).
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "WAKE_ON_CHAT_PLUGIN",
	MagicCookieValue: "3f7d9c1e5b2a4086a1c4e8f0d2b6a9c7",
}

// The plugin map keys: a GPU plugin serves KindGPU, a model-API plugin
// KindProvider.
const (
	KindGPU      = "gpu"
	KindProvider = "provider"
)

// PluginMap is the plugin set the host dispenses from. A plugin binary
// serves one entry of it, with Impl set (see ServeGPU and ServeProvider).
var PluginMap = map[string]plugin.Plugin{
	KindGPU:      &GPUPlugin{},
	KindProvider: &ProviderPlugin{},
}

// GPUPlugin is the go-plugin kind for GPU. Impl is set on the plugin side
// and nil on the host side; the host receives a GPU from Dispense.
type GPUPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl GPU
}

var _ plugin.GRPCPlugin = (*GPUPlugin)(nil)

// GRPCServer registers Impl on s (plugin side).
func (p *GPUPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterGPUServer(s, &gpuServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a GPU that calls the plugin over c (host side).
func (p *GPUPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &gpuClient{client: pb.NewGPUClient(c)}, nil
}

// ProviderPlugin is the go-plugin kind for Provider. Impl is set on the
// plugin side and nil on the host side.
type ProviderPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Provider
}

var _ plugin.GRPCPlugin = (*ProviderPlugin)(nil)

// GRPCServer registers Impl on s (plugin side).
func (p *ProviderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterProviderServer(s, newProviderServer(p.Impl))
	return nil
}

// GRPCClient returns a Provider that calls the plugin over c (host side).
func (p *ProviderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &providerClient{client: pb.NewProviderClient(c)}, nil
}
