package resolve

import (
	"encoding/json"
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

// NotReadyError says the provider's pod cannot answer yet: it is asleep (not
// running, or its state unreadable), or it is up with its model still loading
// (ModelLoading, D7). Both variants come from NewNotReadyError and carry the
// same flags (D3). It is plain data about what the conductor said: the wake
// coordinator acts on the pod through the GPU plugin it was given, never
// through an error.
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
}

// NewNotReadyError builds the not-ready error for pod from what the conductor
// said (res) — the one factory for the asleep and the model-loading variant
// (D7).
func NewNotReadyError(pod string, res Resolution, modelLoading bool) *NotReadyError {
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
	return e
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
