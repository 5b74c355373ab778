// Package sim simulates the two remote parties of a wake on one machine: the
// conductor (the pod-lifecycle service that reports a GPU pod and starts it) and
// the model behind the pod's proxy (vLLM's OpenAI-compatible API). It serves
// both from one loopback HTTP server, so `wakehost -simulate`, `make demo` and
// tests can run a whole wake — asleep, waking, model loading, ready, idle stop —
// without a GPU, a conductor or RunPod.
//
// Sim is a test and demo fixture. It must never be wired into a production
// path: it answers every request without authentication, it invents pod ids, and
// its model only echoes. Nothing outside tests, the -simulate flag, the demo
// and the benchmark harness (host/cmd/wakebench) may import it.
//
// # Phases
//
// A pod's phase at time t is a pure function of the wake's timestamps (when it
// was started, when the model answered its last completion, an explicit stop),
// the configuration and t. Sim starts no timers and no goroutines that change
// state; every request, and Snapshot, computes the phase from the injected
// Clock. Advancing a fake clock is therefore all a test does to move a pod on.
// Times below are after the start request, with the default delays, in
// real-world time (Config.Scale divides them):
//
//	asleep        EXITED,  isRunning false, podId of the last pod (or "")
//	creating      0s:      still EXITED; the replacement pod does not exist yet
//	created       15s:     CREATED, isRunning false, the new podId
//	model loading 6m30s:   RUNNING, isRunning true, proxyUrl {URL}/proxy/{podId};
//	                       the proxy answers completions with RunPod's 502 HTML page
//	ready         9m:      completions answer; GET reports readySince
//	idle stop     15m after the later of readiness and the last answered
//	              completion: EXITED again; the old proxy URL answers 404
//
// With Config.NoIdleStop the pod never stops itself, like a backend whose
// pods only the host stops (a container, a RunPod pod): it stays ready until
// a stop request.
//
// This reproduces the first live wake of 2026-09-09: the conductor reported the
// pod RUNNING minutes before vLLM answered, and the proxy said 502 meanwhile.
// A pod whose model never answers (NeverReady) stays RUNNING with 502 forever,
// like a stuck vLLM; loading time never counts as idle.
//
// # Endpoints
//
// Conductor, at URL():
//
//	GET  /api/pods/{name}        200 PodView; 404 {"error":"pod not found","lookup":"NOT_FOUND"}
//	POST /api/pods/{name}/start  wake or join the wake in flight; see below
//	POST /api/pods/{name}/stop   EXITED now; 200 {"status":"EXITED"}; counted by
//	                             StopRequests, and Wakes says which wake it ended
//
// Model, at a pod's proxyUrl:
//
//	POST /v1/chat/completions    200 OpenAI chat.completion, content "echo: " + last message
//	GET  /v1/models              200 vLLM model list; the model id is the pod name (the
//	                             provider plugin's probe asks it; it is no activity)
//	GET  /health                 200 empty body, like vLLM
//
// Every proxy path answers 404 (plain text) unless its pod id is the pod's
// current one and the pod is RUNNING, and 502 (HTML) while the model loads.
// A completion echoes the request's model, or the pod name when it is empty.
// With "stream": true it answers an event stream like vLLM's: a chunk with
// the role, one chunk per word of the answer, a chunk with finish_reason
// "stop", a usage chunk when stream_options.include_usage is set, then
// data: [DONE], each flushed at once (SetStreamGap spaces the word chunks,
// AwaitStreams waits for streams to end and counts those sent to the end
// and those whose client left first).
// Completions counts the completions the model answered, streamed or not.
// Config.OnAnswer, when set, is told of each of them: when its handler began
// and when its answer (a stream: its first chunk) was written, on the wall
// clock, so that the benchmark harness, whose client shares the process,
// can split a request's time into the legs before and after the model.
//
// A start from asleep begins a new wake with a new pod id ("pod-1", "pod-2", …,
// counted across all pods); a start while a wake is in flight joins it. Like the
// real conductor, start holds the request until the pod is RUNNING and then
// answers 200 {"status":"RUNNING"}; with Config.NoStartHold it answers 202
// {"status":"STARTING"} at once (the 202-first contract, rig-conductor#2052).
// A start on a pod already RUNNING answers 200 at once either way. A held start
// re-checks the clock every 10 ms of real time; with a fake clock it waits until
// the test advances the clock past BootDelay, its request is cancelled (503),
// or the Sim is closed (503).
//
// # Caller's duties
//
//   - Call Close. It unblocks held starts, then shuts the server down.
//   - A fake Clock must be safe for concurrent use (the tests' ManualClock
//     is): handlers call Now from the server's goroutines.
//   - Config.OnAnswer runs on the request's path and concurrently for
//     concurrent requests: it must be quick, safe for concurrent use and
//     must not block.
//   - The test controls (ForceStartStatus, NeverReady) panic on a
//     pod name the Sim does not serve: a typo in a test must not pass quietly.
//
// # Default timings
//
// CreateDelay 15s, BootDelay 6m30s, LoadDelay 2m30s (a wake takes 9 minutes),
// IdleStop 15m (NoIdleStop false), Scale 1. Scale 27 turns the 9-minute wake into 20 seconds.
package sim
