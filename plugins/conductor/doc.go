// Package conductor is the GPU plugin for the rig conductor: a Client that
// implements pluginapi.GPU over the conductor's HTTP API
// (GET /api/pods/{name}, POST /api/pods/{name}/start and .../stop).
//
// Serve is the plugin's body: the wake-plugin-conductor binary
// (cmd/wake-plugin-conductor) runs it, and so does wakehost for the plugin
// built into it. Benchmarks and tests use the Client directly. It classifies every outcome as
// the plugin API asks (design D2 and #684): StartPod and StopPod never
// return an error, and a start whose answer the client stopped waiting for,
// or whose connection was cut after it was written whole, is in flight,
// not failed.
//
// It must not import any package of this module other than pluginapi, must
// not read the environment outside Serve, must not retry, and must never put
// the conductor's URL or the wake token into an error, a result or a log
// line.
package conductor
