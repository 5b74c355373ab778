// Package proto is the generated Go code for wakeplugin.proto, the wire
// contract between wakehost and its plugins.
//
// Do not edit the .pb.go files: change wakeplugin.proto and run
// `go generate ./plugins/pluginapi/`. Host code and Go plugins should not
// use this package directly: package pluginapi converts it to plain Go
// types.
package proto
