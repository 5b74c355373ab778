package machines

import (
	"fmt"
	"log/slog"
)

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
