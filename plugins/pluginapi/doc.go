// Package pluginapi is the contract between wakehost and its plugins: the
// plain Go types and interfaces (GPU, Provider and its wire calls,
// Streamer and Prober), the go-plugin handshake (protocol 3) and
// plugin map, the gRPC adapters between those interfaces and the wire
// (proto/wakeplugin.proto), the environment variables through which the
// host configures a plugin, ServeGPU / ServeProvider for a plugin's main,
// and the HTTP mechanics plugins share: Fetch (one capped request, its
// answer read bounded, its failure classed), Send (a start or stop sent
// once and classified as a StartResult) and OpenAIStream.
//
// Host and plugins both import this package, so it must stay small and
// stable: it must not import any other package of this module (only its
// own generated proto package), must hold no provider-specific code, and
// must not perform I/O beyond serving a plugin and the HTTP calls a
// caller hands it. Names and signatures here are a product API that
// third-party plugins code against: add, never change.
//
// # The wire rule
//
// A failure that is data (a pod lookup the conductor could not answer, a
// classified completion failure, a model that does not answer a probe)
// travels inside the gRPC response and is rebuilt on the host side as the
// same Go value: a *LookupError, a *CompletionError or a ProbeResult. A
// gRPC status error means the plugin itself failed.
//
// A completion's request and answer bodies are OpenAI chat-completions
// JSON: the API's one format for a completion, whatever the model behind a
// plugin speaks (CompletionBody, ReadContent and StreamFromComplete
// translate the text-only Provider view to and from it).
//
// # Writing a plugin
//
// See plugins/README.md. In short:
//
//	func main() {
//		logger := pluginapi.NewLogger()
//		client := mygpu.New(...) // reads its configuration from the environment
//		pluginapi.ServeGPU(client, logger)
//	}
package pluginapi
