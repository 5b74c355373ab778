// Package supervisor launches and keeps alive wakehost's plugins: the GPU
// plugin (pod lifecycle) and the Provider plugin (model API), each a
// hashicorp/go-plugin gRPC subprocess.
//
// NewGPU and NewProvider return values that implement pluginapi.GPU and
// pluginapi.Provider, so the rest of the host never sees a process. The
// caller's duties, in order:
//
//   - Build a Spec: the binary's path, the plugin's whole environment
//     (Spec.Env, KEY=VALUE, per the contract in pluginapi; nothing else is
//     inherited), the secret values to scrub from what the plugin sends
//     back, and a logger.
//   - Call Start at startup to launch and handshake now, so a missing or
//     broken binary is reported before the first chat turn. (A call before
//     Start launches the plugin itself.)
//   - Make calls from any goroutine. A plugin that crashed is relaunched on
//     the next call; concurrent callers share one relaunch.
//   - Call Close at shutdown.
//
// Crash rules: GetPod is idempotent and retried once after a relaunch.
// StartPod and StopPod are not retried (a wake must not be sent twice): a
// crash is StartResult{Error: "plugin unavailable"}, not an error. Complete
// is never retried (the payload may be what crashed the model): a crash is
// &pluginapi.CompletionError{Message: "provider plugin crashed"}, a plain
// provider failure whose outcome is unknown.
//
// The package must not decide anything about pods or wakes (that is the
// host's policy), must not read the host's environment on a plugin's
// behalf, and must not let a plugin's secrets reach the host's logs.
package supervisor
