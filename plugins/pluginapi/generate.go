package pluginapi

// Regenerate proto/wakeplugin.pb.go and proto/wakeplugin_grpc.pb.go from
// proto/wakeplugin.proto with the pinned generators (see gen.sh).
//go:generate bash gen.sh
