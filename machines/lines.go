package machines

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// WakeResult is the outcome of one start request, as the GPU plugin reports
// it (pluginapi.StartResult, copied here so this package stays pure).
type WakeResult struct {
	Requested bool
	Status    int // HTTP status, 0 when none
	TimedOut  bool
	TimeoutMs int64
	// Lost is true when the request was handed over and its answer was
	// lost (the plugin stopped during the call, the host stopped waiting,
	// or the connection to the conductor was cut after the request was
	// written whole): like a client timeout it is in flight, and watched.
	Lost  bool
	Error string // a short class such as ECONNREFUSED, for a request never sent; with Lost, what happened
	// Credential is the name of the environment variable whose credential
	// the pod's backend sends with a start (a RunPod API key variable),
	// for the line of a 401/403; "" is the conductor's RIG_WAKE_TOKEN.
	Credential string
}

// DescribeWakeResult gives a start request's outcome its operator log line
// and level (#684). Operators grep "wake requested for pod" to see that a wake
// fired, and alert on "wake refused" and "wake failed"; a client timeout is a
// wake in flight, not a fault. A nil result is a failure.
func DescribeWakeResult(pod string, r *WakeResult) (slog.Level, string) {
	switch {
	case r == nil:
		return slog.LevelError, fmt.Sprintf("wake failed for pod %s: no result", pod)
	case r.Requested && r.Lost:
		return slog.LevelInfo, fmt.Sprintf("wake requested for pod %s: in flight (the start's answer was lost: %s; watching the pod)", pod, r.Error)
	case r.Requested && r.TimedOut:
		return slog.LevelInfo, fmt.Sprintf("wake requested for pod %s: in flight (client timed out after %s s; the conductor continues)",
			pod, strconv.FormatFloat(float64(r.TimeoutMs)/1000, 'f', -1, 64))
	case r.Requested:
		return slog.LevelInfo, fmt.Sprintf("wake requested for pod %s: accepted status=%d", pod, r.Status)
	case (r.Status == 401 || r.Status == 403) && r.Credential != "":
		return slog.LevelError, fmt.Sprintf("wake refused for pod %s: status=%d (the GPU backend rejected its credential: check %s in the host's environment)", pod, r.Status, r.Credential)
	case r.Status == 401 || r.Status == 403:
		return slog.LevelError, fmt.Sprintf("wake refused for pod %s: status=%d (the conductor's start wants a valid operator token: check RIG_WAKE_TOKEN in the host's environment)", pod, r.Status)
	case r.Status != 0:
		return slog.LevelError, fmt.Sprintf("wake refused for pod %s: status=%d", pod, r.Status)
	case r.Error != "":
		return slog.LevelError, fmt.Sprintf("wake failed for pod %s: %s", pod, r.Error)
	default:
		return slog.LevelError, fmt.Sprintf("wake failed for pod %s: no result", pod)
	}
}

// OutcomeEvent turns a start's result into the event to feed back to the
// machine for the wake requested at wake, or false when the start needs no
// feedback (accepted or in flight: the watch takes over).
func OutcomeEvent(r *WakeResult, wake, now time.Time) (Event, bool) {
	switch {
	case r != nil && r.Requested:
		return Event{}, false
	case r != nil && r.Status != 0:
		return Event{Trigger: StartRefused, At: now, HTTPStatus: r.Status, Wake: wake}, true
	default:
		return Event{Trigger: StartNotSent, At: now, Wake: wake}, true
	}
}

// DescribeDecision is the operator's log line for a not-ready turn: what the
// conductor said and what the policy decided. A stuck decision carries the
// STUCK marker and a crashed one the CRASHED marker; both are logged at
// error level (D9).
func DescribeDecision(pod, status string, modelLoading bool, d Decision) (slog.Level, string) {
	what := "status " + status
	if status == "" {
		what = "status unknown"
	}
	if modelLoading {
		what += ", model loading"
	}
	line := fmt.Sprintf("provider not ready for pod %s (%s) → %s", pod, what, d.Action)
	switch {
	case d.Stuck:
		return slog.LevelError, line + " — STUCK: up but not answering"
	case d.Crashed:
		return slog.LevelError, line + " — CRASHED: was answering, stopped while RUNNING"
	}
	return slog.LevelInfo, line
}
