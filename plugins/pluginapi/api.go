package pluginapi

import (
	"context"
	"fmt"
	"time"
)

// Lookup says how sure a GPU plugin is about a pod.
type Lookup string

// The lookups a GPU plugin reports. An empty Lookup from a conductor means
// LookupFound.
const (
	LookupFound      Lookup = "FOUND"
	LookupNotFound   Lookup = "NOT_FOUND"
	LookupUnreadable Lookup = "UNREADABLE"
)

// StatusRunning is the pod status that, with a proxy URL, means the GPU is up.
const StatusRunning = "RUNNING"

// Pod is a GPU plugin's report of one pod.
type Pod struct {
	Name      string
	Status    string // the provider's word: RUNNING, EXITED, CREATED, ...
	IsRunning bool
	ProxyURL  string // base URL of the pod's HTTP proxy; empty when not running
	PodID     string
	// ReadySince is the moment the model of this boot started answering, as
	// the provider gave it; zero when it gave none, or none that parses. On
	// the wire it is RFC 3339; the adapters parse it once, here.
	ReadySince time.Time
	Lookup     Lookup
}

// StartResult is the outcome of a start (or stop) request. It is never an
// error: every outcome is data the host logs and feeds to its wake policy.
type StartResult struct {
	// Requested is true when the provider accepted the request (HTTP 200/202)
	// or when the request was sent and no answer came: the client gave up
	// waiting (TimedOut) or the connection was cut (Lost). The provider goes
	// on waking, or may.
	Requested bool
	Status    int   // HTTP status; 0 when there was none
	TimedOut  bool  // the request was sent and the client stopped waiting: in flight
	TimeoutMs int64 // with TimedOut: how long the client waited, in milliseconds
	// Lost is true when the request was written whole and the connection
	// was then cut before an answer, without a timeout (Error says how:
	// "ECONNRESET", "EOF", ...). It may have reached the provider, so like
	// a timeout it is in flight (Requested), its answer lost (design D2,
	// #684). A cut before the request was written whole is not Lost: it
	// was not sent.
	Lost bool
	// Error is a short class for a request that got no HTTP answer: with
	// Lost, how its connection was cut; otherwise it is not in flight: it
	// never reached the provider ("ECONNREFUSED", "DNS", "ETIMEDOUT" for a
	// connect that timed out), its connection failed before the request
	// was written whole ("ECONNRESET", "EPIPE"), or it was refused before
	// sending ("invalid pod name"). See ErrorClass. Never a URL, never a
	// secret.
	Error string
}

// GPU is the pod-lifecycle plugin kind.
//
// Every method honours ctx (its deadline and cancellation cross the plugin
// boundary) and applies its own time cap on top.
type GPU interface {
	// GetPod reports one pod. A lookup that could not learn the pod's
	// state is a *LookupError: any error a plugin's GetPod returns reaches
	// the host as one (the host's own cancellation and a crashed plugin
	// are other errors). A pod the provider does not know is a Pod with
	// Lookup LookupNotFound, not an error.
	GetPod(ctx context.Context, name string) (Pod, error)
	// StartPod asks the provider to start (wake) a pod. Every outcome is a
	// StartResult; implementations return a nil error. A TimedOut or Lost
	// result means the request is in flight, not that it failed.
	StartPod(ctx context.Context, name string) (StartResult, error)
	// StopPod asks the provider to stop a pod, with StartPod's rules.
	StopPod(ctx context.Context, name string) (StartResult, error)
}

// Message is one chat message.
type Message struct {
	Role    string
	Content string
}

// CompletionRequest is one chat completion.
type CompletionRequest struct {
	Model    string
	Messages []Message
}

// Provider is the text-only view of a model-API plugin. Complete makes
// exactly one HTTP attempt against endpoint (a base URL such as
// https://host/v1) and never retries. A failed attempt returns a
// *CompletionError.
//
// Since protocol 2 the wire carries Stream (see Streamer) for a
// completion: a plugin's Provider should also be a Streamer; one that is
// not is served through StreamFromComplete. On the host side Complete is
// Stream with a request built from req and the answer's content read back
// (see CompleteVia). Since protocol 3 it also carries Probe (see Prober): a
// plugin's Provider must also be a Prober; one that is not answers every
// probe with codes.Unimplemented, and the host never learns readiness
// from it.
type Provider interface {
	Complete(ctx context.Context, endpoint string, req CompletionRequest) (string, error)
}

// CompletionError classifies a failed completion.
type CompletionError struct {
	// Status is the HTTP status the model answered, 0 when there was none.
	// A 200 whose body died or did not parse carries 200.
	Status int
	// TransportFailure is true only when the request got no response at
	// all. A timeout is not a transport failure.
	TransportFailure bool
	// Aborted is true when the completion timeout cut the request.
	Aborted bool
	// Message is a short description without URLs or secrets.
	Message string
	// Body is the model's error body, when the model answered a non-200
	// with a JSON object: at most 64 KiB, with the API key redacted, for
	// the host to relay after scrubbing it again. Nil otherwise (HTML,
	// text, no answer, a 200).
	Body []byte
}

func (e *CompletionError) Error() string {
	switch {
	case e.Aborted:
		return "completion aborted: " + e.Message
	case e.TransportFailure:
		return "completion transport failure: " + e.Message
	default:
		return fmt.Sprintf("completion failed: status=%d: %s", e.Status, e.Message)
	}
}
