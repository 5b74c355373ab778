// Package openai is wake-on-chat's OpenAI-compatible door: GET /v1/models
// and POST /v1/chat/completions, for the chat clients people already point
// at a self-hosted model (Open WebUI, LibreChat, the OpenAI SDKs, curl).
//
// The models are the configured providers, listed from config: the list
// answers while every pod sleeps and never wakes anything. A completion's
// model is a provider's name; the request body goes to that provider's
// model with every field the client sent left as it was, except model,
// which becomes the provider's model, and the host's own status replies,
// which are taken out of the messages (see Recognizer). The door is
// stateless, as the OpenAI API is: the client sends the history, and the
// door stores nothing.
//
// Every completion is a turn of the turn service (host/turn), the same
// /api/chat uses (so one wake serves both doors); the door decodes,
// encodes and maps errors to statuses in one table (errorClasses). A model
// that answers is relayed: a non-streaming answer as it came, a stream
// event by event, each flushed at once. A model that is not ready answers
// with the policy's plain-text reply as a well-formed chat.completion or a
// complete chunk sequence; in "hold" mode the service holds the request
// while the pod wakes and runs it once when the model is freshly ready,
// and the door sends a stream's head at once and its keepalives. Every
// completion answer carries X-Wake-State.
//
// What this package must not do: put a URL, an API key or an error's raw
// text in a reply (a model's own error message is relayed only scrubbed);
// log a key or a message's content; wake a pod on its own (only the
// coordinator's decision does); run a held request twice, or after its
// client left.
package openai
