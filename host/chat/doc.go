// Package chat is wake-on-chat's HTTP surface: POST /api/chat, GET
// /api/pods/{name}, GET /api/pods/{name}/events (the pod's changes, pushed
// from host/events: no conductor lookup per subscriber), /healthz and
// /readyz.
//
// Every turn is a turn of the turn service (host/turn); the door decodes,
// encodes and maps errors to statuses in one table (codes). A turn that
// reaches a model answers 200 {reply, sessionId}. A turn that finds the
// model not ready runs the wake policy (through the service) and answers
// 200 in the same shape with the policy's plain-text reply, so every
// client renders it as an assistant message (D4). Config-class failures,
// not-ready errors that are not retryable and plain provider failures answer
// 502 {"error":"the agent provider failed"} byte for byte and never wake (D5).
// wakeMode "wait" and "resume" let a foreground client keep its prompt until
// the model is freshly ready (#715; docs/http-contract.md).
//
// Every answer is JSON: Listener wraps the server's listener so that even
// the refusals net/http writes before any handler runs are.
//
// The package never puts an error's text, a URL or a secret in a response:
// users see the policy's replies and fixed error strings; the log gets the
// detail, once.
package chat
