package pluginapi

import (
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// MaxMessageBytes is the largest gRPC message either side of the plugin
// boundary sends or accepts: 32 MiB, in both directions, on the host's
// client and on a plugin's server. The host's config keeps the largest
// request it can build below it.
const MaxMessageBytes = 32 << 20

// GRPCServer is the plugin.ServeConfig.GRPCServer of every wake-on-chat
// plugin: go-plugin's default server, sending and accepting messages of up
// to MaxMessageBytes (gRPC's own default accepts only 4 MiB, less than a
// long conversation). Serve, ServeGPU and ServeProvider use it; a plugin
// that calls plugin.Serve itself should too.
func GRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return plugin.DefaultGRPCServer(append(opts,
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
	))
}
