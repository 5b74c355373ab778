// Package runpod is the GPU plugin for pods on RunPod: a Client that
// implements pluginapi.GPU over RunPod's REST API v2, with no conductor in
// between. Serve is the plugin's body, run by the wake-plugin-runpod binary
// (cmd/wake-plugin-runpod) and by wakehost, which has it built in;
// runpodfake is a fake of the API for tests.
//
// It must not import any package of this module other than pluginapi,
// must not read the environment but through ConfigFromEnv (Serve passes
// it os.Getenv), must not retry, and must never put the API key or a URL
// into an error, a result or a log line.
//
// # Configuration
//
// The host configures the plugin only through its environment:
//
//	WAKE_RUNPOD_API_KEY_ENV  the NAME of the variable holding the API key (required;
//	                         the host passes it and the variable it names)
//	WAKE_RUNPOD_URL          the API's base URL (default https://api.runpod.io/v2)
//	WAKE_RUNPOD_PORT         the pod's internal HTTP port of the model (default 8000)
//	WAKE_RUNPOD_PROXY_URL    the model's base URL, {id} and {port} filled in
//	                         (default https://{id}-{port}.proxy.runpod.net)
//	WAKE_RUNPOD_PODS         host pod name = RunPod pod id, comma-separated; a name
//	                         not listed is the pod id itself
//	WAKE_LOOKUP_TIMEOUT      caps one GetPod (default 3s)
//	WAKE_START_TIMEOUT       caps one StartPod or StopPod (default 3s)
//
// # The API it relies on
//
// From RunPod's OpenAPI schema for v2 (runpod/docs,
// api-reference-v2/openapi.json, commit a900806e of 2026-08-20) and its
// guides. REST API v1 (https://rest.runpod.io/v1, POST /pods/{podId}/start
// and /stop, desiredStatus RUNNING/EXITED/TERMINATED) is deprecated and
// retired on 2026-11-15 (api-reference/overview.mdx,
// api-reference-v2/migrate-from-v1.mdx); the plugin speaks only v2.
//
//   - Authentication: "Authorization: Bearer KEY" on every request. 401
//     when the key is missing or invalid, 403 when it lacks access.
//   - GET /v2/pods/{id}: 200 with the Pod object; 404 when there is no
//     such pod; 429 when rate limited, with Retry-After in seconds; other
//     errors as RFC 9457 problems {title, status, detail, errors}. Of the
//     Pod the plugin reads id (checked against the id asked) and status,
//     one of PROVISIONING (being allocated), STARTING (the container is
//     starting), RUNNING (the container is healthy), EXITED (stopped),
//     ERROR (unrecoverable) and TERMINATED (permanently deleted). It does
//     not read runtime (uptime and utilisation, null unless RUNNING),
//     startedAt, ports, gpu, dataCenterId or cost: v2's status already
//     tells a starting container from a running one, which v1's
//     desiredStatus did not, and no field says when the model answers.
//   - POST /v2/pods/{id}/action with {"action":"start"} or
//     {"action":"stop"}: 200 with the updated pod; 409 when the action is
//     not valid for the pod's status (start is valid from EXITED and
//     ERROR, stop from RUNNING, PROVISIONING and STARTING); 400, 401, 403,
//     404, 422, 429 otherwise.
//   - The model's address: RunPod's HTTP proxy serves the pod's internal
//     port P, exposed as "P/http", at https://{id}-{P}.proxy.runpod.net
//     (pods/configuration/expose-ports.mdx), and closes a request after
//     100 s with a 524 (design D6).
//   - A stopped pod stays on its machine; when another user has taken
//     that machine's GPUs, it cannot be resumed (pods/troubleshooting/
//     zero-gpus.mdx). The API reference does not list the answer; as
//     reported from live starts it is an error whose text says "There are
//     not enough free GPUs on the host machine to start this pod" (400 on
//     v2, 500 on v1). The plugin matches those words in the body, whatever
//     the status, only to log the refusal as such.
//
// # How it maps the API onto the plugin contract
//
// GetPod: RUNNING is IsRunning with ProxyURL; the other statuses are not
// running (the host keeps a wake waiting through PROVISIONING and
// STARTING); TERMINATED and a 404 are Lookup NOT_FOUND; ReadySince is
// always zero (the host's probe of the model finds readiness); any other
// answer, an unknown status, a timeout or no connection is a
// *pluginapi.LookupError, which the host takes as UNREADABLE.
//
// StartPod and StopPod follow design D2: a 200 is requested; a 409 is
// requested only when a read of the pod finds the action's effect under
// way (a start joins a wake in progress, as the conductor's does; a stop
// finds the pod EXITED); every other HTTP answer, 401, 403, 404, 429, 5xx
// and a machine with no free GPU included, is a definite refusal with its
// status; a request written whole and then cut by the time cap or a broken
// connection is in flight; one never written whole is start-failed with
// its error class.
package runpod
