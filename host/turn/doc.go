// Package turn runs a chat turn's life for every door (host/chat's
// /api/chat, host/openai's /v1/chat/completions): the doors decode a
// request, hand the service a model call, and encode what comes back.
//
// A turn runs on a ready model with a send mode (resolve.Send: Retry,
// NoResend, Once), a parameter of the one model call the door gives. A
// model that is not ready runs the pod lifecycle machine through the wake
// coordinator (which may wake the pod, D4), and the service says what the
// machine says: a reply (Run), a pending wake the client resumes (Wait,
// Resume), or a hold until the pod is ready (Run with a Hold). A held or
// resumed prompt runs once (resolve.Once), and a completion whose outcome
// is unknown is never sent again (D10). A model that answers is told to
// the machine by the model itself (resolve.Model tells its resolver's
// observer).
//
// Errors the doors must answer as something other than a failure are
// sentinels (ErrNoPending, ErrPendingMismatch, ErrPodGone,
// ErrProviderGone); every other error is a failure the door answers as
// one (D5), and nothing was woken for it. The service never writes to a
// client and decides no status: each door maps errors to statuses in one
// table. It logs what it handles (the resume and hold lines), never an
// error it returns.
//
// Every fact it reads about a pod lifecycle state (holdable, freshly
// ready, the reply of a turn that must not wake) is in policy.go.
package turn
