// Package openai is the model-API plugin for OpenAI-compatible chat
// completion servers (vLLM behind the RunPod proxy, in practice): a Client
// that implements pluginapi.Streamer (and Provider on top of it) with
// exactly one POST {endpoint}/chat/completions per call, the request body
// sent as the host gave it and the answer handed back as it arrives, and
// pluginapi.Prober with one GET {endpoint}/models per probe (vLLM answers
// it only once its engine is up; it runs no model).
//
// It classifies every failure as a *pluginapi.CompletionError the way the
// host's three-state wake logic needs it (design D6, D7, D10): the HTTP
// status when the model answered, TransportFailure only when there was no
// response at all, Aborted when the time cap or the caller cut the request,
// and Status 200 for a 200 whose body died or stalled (whether a body
// parses is the host's to say). A probe is classified the same way, as a
// pluginapi.ProbeResult.
//
// Serve is the plugin's body: the wake-plugin-provider-openai binary
// (cmd/wake-plugin-provider-openai) runs it, and so does wakehost for the
// plugin built into it.
//
// It must not import any package of this module other than pluginapi, must
// not read the environment outside Serve, must never retry or re-send a
// payload, and must never put the API key, a URL, HTML or more than a
// short excerpt of a response body into an error or a log line.
package openai
