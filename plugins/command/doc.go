// Package command is the GPU plugin that runs operator-given commands: a
// Runner that implements pluginapi.GPU by running a status command
// (GetPod), a start command (StartPod) and a stop command (StopPod), for
// a GPU backend that has a command line but no conductor: a container
// (docker start vllm), a systemd unit (systemctl start vllm), a cloud VM
// (gcloud compute instances start …). It is used by the
// wake-plugin-command binary (cmd/wake-plugin-command); docs/backends.md
// has working lines for each backend.
//
// # The environment
//
// The host configures the plugin only through its environment, which it
// builds explicitly (the plugin inherits nothing else from the host).
// FromEnv reads it:
//
//	WAKE_COMMAND_START           start command, a JSON array of strings (required)
//	WAKE_COMMAND_STOP            stop command, the same (optional)
//	WAKE_COMMAND_STATUS          status command, the same (required)
//	WAKE_COMMAND_STATUS_BY       json (default) or exit
//	WAKE_COMMAND_STATUS_DOWN_CODES  exit mode: the codes that mean EXITED (default 1,2,3)
//	WAKE_COMMAND_URL             the model endpoint's base URL (required with exit)
//	WAKE_COMMAND_START_TIMEOUT   cap on one start command (default 60s)
//	WAKE_COMMAND_STOP_TIMEOUT    cap on one stop command (default 60s)
//	WAKE_COMMAND_STATUS_TIMEOUT  cap on one status command (default 10s)
//	WAKE_COMMAND_PASS_ENV        names of variables the commands get, comma-separated
//	PATH                         the commands' PATH (default DefaultPath)
//	WAKE_LOG_LEVEL               the plugin's log level (pluginapi)
//
// A command is an argument vector run without a shell; {pod} in an
// argument (or in the URL) is replaced by the pod name, which is a
// pluginapi.ValidPodName. A shell runs only when the operator writes one
// (["sh","-c","…"]). Each command's environment is exactly PATH and the
// variables WAKE_COMMAND_PASS_ENV names (the host must pass those to the
// plugin): no other variable of the plugin's reaches it. Its standard
// input and error are /dev/null, its standard output too except for a
// status command in json mode. It runs in a process group of its own,
// killed whole (SIGKILL) when its timeout fires or the host's call ends.
//
// # Answers
//
// A status command in json mode prints one JSON object and exits 0:
//
//	{"status":"RUNNING","url":"http://10.0.0.7:8000/v1","readySince":"2026-09-09T12:33:56Z"}
//
// status is the backend's word in any case (upper-cased: running becomes
// RUNNING; only RUNNING is up), url the model endpoint's base URL while
// RUNNING (WAKE_COMMAND_URL when absent), readySince optional (RFC 3339,
// when this boot's model started answering). In exit mode the exit code
// is the answer: 0 RUNNING at WAKE_COMMAND_URL; one of
// WAKE_COMMAND_STATUS_DOWN_CODES EXITED (by default 1, 2 and 3, the LSB
// status action's "not running" codes; systemctl is-active exits 3 when
// the unit is not active, and 1 when it cannot reach systemd, so give it
// 3 alone); any other code or a signal cannot be read. A status that cannot be read (a timeout, output
// past 64 KiB, output that is not one JSON object, a non-zero exit in json
// mode, a program that is not found) is a *pluginapi.LookupError, which
// the host takes as UNREADABLE: it waits and wakes nothing.
//
// A start or stop that exits 0 is Requested. One that exits non-zero, or
// cannot run, is Requested false with a short class in Error ("exit
// status 1", "not found"), which the host records as start-failed. One
// whose timeout (or the host's context) ended it while it ran is in flight
// (Requested, TimedOut), as the conductor plugin's (design D2, #684): the
// operation it asked for may go on without its client. A start command
// must therefore return once the start is asked for: one that runs the
// model server in the foreground is killed at its timeout.
//
// It must not import any package of this module other than pluginapi,
// must not read the environment except through FromEnv's getenv (main
// passes os.Getenv), must not retry, must not run a shell of its own, and
// must never put a command's arguments, output or environment into an
// error, a result or a log line: they may hold secrets.
package command
