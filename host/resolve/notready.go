package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// The two user messages of a NotReadyError (D11). They are plain text, safe
// to send to a user as they are.
const (
	AsleepMessage  = "The model server is not running right now."
	LoadingMessage = "The GPU is up and the model is still loading — try again shortly."
)

// ErrNoCapabilities is what ReadPod returns on a NotReadyError built without
// a GPU plugin.
var ErrNoCapabilities = errors.New("not-ready error carries no pod capabilities")

// NotReadyError says the provider's pod cannot answer yet: it is asleep (not
// running, or its state unreadable), or it is up with its model still loading
// (ModelLoading, D7). Both variants come from NewNotReadyError and carry the
// same flags and capabilities (D3, D12): Wake and ReadPod act on the pod the
// error is about. The capabilities are unexported, so they appear neither in
// JSON nor in LogValue, and they survive any %w wrapping: find the error with
// errors.As.
type NotReadyError struct {
	Provider     string           `json:"-"`
	Pod          string           `json:"pod"`
	Status       string           `json:"status"`
	Lookup       pluginapi.Lookup `json:"lookup"`
	PodID        string           `json:"podId"`
	ModelLoading bool             `json:"modelLoading,omitempty"`
	// Retryable is true: asking again later may succeed (D5).
	Retryable   bool   `json:"retryable"`
	UserMessage string `json:"userMessage"`

	wake    func(context.Context) pluginapi.StartResult
	readPod func(context.Context) (pluginapi.Pod, error)
}

// NewNotReadyError builds the not-ready error for pod from what the conductor
// said (res) — the one factory for the asleep and the model-loading variant
// (D7). With a nil gpu the error carries no capabilities.
func NewNotReadyError(pod string, res Resolution, modelLoading bool, gpu pluginapi.GPU) *NotReadyError {
	lookup := res.Lookup
	if lookup == "" {
		lookup = pluginapi.LookupFound
	}
	e := &NotReadyError{
		Pod:          pod,
		Status:       res.Status,
		Lookup:       lookup,
		PodID:        res.PodID,
		ModelLoading: modelLoading,
		Retryable:    true,
		UserMessage:  AsleepMessage,
	}
	if modelLoading {
		e.UserMessage = LoadingMessage
	}
	if gpu != nil {
		e.wake, e.readPod = capabilities(pod, gpu)
	}
	return e
}

// Capabilities is what a not-ready error can do to its pod.
type Capabilities interface {
	Wake(ctx context.Context) pluginapi.StartResult
	ReadPod(ctx context.Context) (pluginapi.Pod, error)
}

// PodCapabilities binds Wake and ReadPod to pod, as a not-ready error does,
// without an error: the host resumes the watch of a wake that was in flight
// when it stopped with them.
func PodCapabilities(pod string, gpu pluginapi.GPU) Capabilities {
	return NewNotReadyError(pod, Resolution{}, false, gpu)
}

// capabilities are the Wake and ReadPod functions bound to pod.
func capabilities(pod string, gpu pluginapi.GPU) (func(context.Context) pluginapi.StartResult, func(context.Context) (pluginapi.Pod, error)) {
	wake := func(ctx context.Context) pluginapi.StartResult {
		r, err := gpu.StartPod(ctx, pod)
		if err != nil {
			return pluginapi.StartResult{Requested: false, Error: errorClass(err)}
		}
		return r
	}
	readPod := func(ctx context.Context) (pluginapi.Pod, error) {
		return gpu.GetPod(ctx, pod)
	}
	return wake, readPod
}

func (e *NotReadyError) Error() string {
	var parts []string
	if e.Status != "" {
		parts = append(parts, "status "+e.Status)
	}
	if e.Lookup != "" && e.Lookup != pluginapi.LookupFound {
		parts = append(parts, "lookup "+string(e.Lookup))
	}
	if e.ModelLoading {
		parts = append(parts, "model loading")
	}
	if len(parts) == 0 {
		parts = append(parts, "status unknown")
	}
	return withProvider(e.Provider, fmt.Sprintf("pod %s not ready (%s)", e.Pod, strings.Join(parts, ", ")))
}

// FallbackEligible is always false (D11): the turn stays on this provider so
// that the not-ready error reaches the chat handler and its wake policy.
func (e NotReadyError) FallbackEligible() bool { return false }

// HasCapabilities reports whether Wake and ReadPod reach a GPU plugin.
func (e *NotReadyError) HasCapabilities() bool { return e.wake != nil && e.readPod != nil }

// Wake asks the GPU plugin to start the pod. It never fails: a plugin error
// becomes a StartResult with Requested false and a short error class.
func (e *NotReadyError) Wake(ctx context.Context) pluginapi.StartResult {
	if e.wake == nil {
		return pluginapi.StartResult{Error: "no capability"}
	}
	return e.wake(ctx)
}

// ReadPod reads the pod's current state from the GPU plugin (D12).
func (e *NotReadyError) ReadPod(ctx context.Context) (pluginapi.Pod, error) {
	if e.readPod == nil {
		return pluginapi.Pod{}, ErrNoCapabilities
	}
	return e.readPod(ctx)
}

// notReadyWire is the JSON shape, in its fixed field order.
type notReadyWire struct {
	Pod              string           `json:"pod"`
	Status           string           `json:"status"`
	Lookup           pluginapi.Lookup `json:"lookup"`
	PodID            string           `json:"podId"`
	ModelLoading     bool             `json:"modelLoading,omitempty"`
	Retryable        bool             `json:"retryable"`
	FallbackEligible bool             `json:"fallbackEligible"`
	UserMessage      string           `json:"userMessage"`
}

// MarshalJSON writes pod, status, lookup, podId, modelLoading (only when
// true), retryable, fallbackEligible, userMessage — in that order.
func (e NotReadyError) MarshalJSON() ([]byte, error) {
	return json.Marshal(notReadyWire{
		Pod:              e.Pod,
		Status:           e.Status,
		Lookup:           e.Lookup,
		PodID:            e.PodID,
		ModelLoading:     e.ModelLoading,
		Retryable:        e.Retryable,
		FallbackEligible: e.FallbackEligible(),
		UserMessage:      e.UserMessage,
	})
}

// LogValue lists the JSON fields and nothing else.
func (e NotReadyError) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("pod", e.Pod),
		slog.String("status", e.Status),
		slog.String("lookup", string(e.Lookup)),
		slog.String("podId", e.PodID),
	}
	if e.ModelLoading {
		attrs = append(attrs, slog.Bool("modelLoading", true))
	}
	attrs = append(attrs,
		slog.Bool("retryable", e.Retryable),
		slog.Bool("fallbackEligible", e.FallbackEligible()),
		slog.String("userMessage", e.UserMessage),
	)
	return slog.GroupValue(attrs...)
}

// errorClass names a failure in a few words without its text, which may hold
// a URL: a context error, else pluginapi.ErrorClass (ECONNREFUSED, ...).
func errorClass(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "DeadlineExceeded"
	case errors.Is(err, context.Canceled):
		return "Canceled"
	default:
		return pluginapi.ErrorClass(err)
	}
}
