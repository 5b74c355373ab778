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
//   - Make calls from any goroutine.
//   - Call Close at shutdown, once the calls are done: a call that Close
//     cuts fails as "closed", never as a crash.
//
// Supervision: once a launch has succeeded, the supervisor watches the
// process (go-plugin cancels the plugin's context when it exits) and
// relaunches it in the background after any exit, with or without
// traffic: 100 ms after the exit, then on a doubling delay up to 30 s
// while launches fail or the relaunched plugin dies within 10 s; a run of
// 10 s starts the schedule afresh. Ready follows the process. A call that
// finds the plugin down waits for the next relaunch if it is due within a
// second (and before the call's deadline), else fails at once with
// ErrNotRunning or the last launch's failure; calls never launch on their
// own once the watch runs, so a broken binary costs one launch per 30 s
// however busy the host is. Each exit is logged "plugin not running;
// relaunching" (WARN), each relaunch "plugin relaunched" (INFO), each
// failed relaunch "plugin relaunch failed" (ERROR), with the attempt and
// the next delay. Until the first launch succeeds (Start failed), a call
// launches the plugin itself.
//
// Crash rules: GetPod is idempotent and retried once after the relaunch.
// StartPod and StopPod are not retried (a wake must not be sent twice): a
// crash is StartResult{Error: "plugin unavailable"}, not an error. Complete
// is never retried (the payload may be what crashed the model): a crash is
// &pluginapi.CompletionError{Message: "provider plugin crashed"}, a plain
// provider failure whose outcome is unknown. Probe is never retried either
// (its caller probes again a moment later): a crash is an error saying so,
// and the plugin is relaunched.
//
// The package must not decide anything about pods or wakes (that is the
// host's policy), must not read the host's environment on a plugin's
// behalf, and must not let a plugin's secrets reach the host's logs.
package supervisor
