package chat

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/turn"
)

// ErrShutdown is the cause with which the host cancels the context of the
// requests still in flight when its shutdown grace ran out (see
// context.WithCancelCause): a turn it cuts answers 503 and is logged "turn
// cut by shutdown", not "turn failed".
var ErrShutdown = errors.New("the host is shutting down")

// providerFailed is the body of every 502, byte for byte what clients know (D5).
const providerFailed = `{"error":"the agent provider failed"}`

// writeProviderFailed writes the generic 502.
func writeProviderFailed(w http.ResponseWriter) {
	jsonhttp.WriteRaw(w, http.StatusBadGateway, []byte(providerFailed))
}

// errorClass is how a turn that ended in an error is answered: its status
// and plain message (the user's), its turn metrics' result, and the log
// line that gets the detail ("" when the error was logged where it
// happened, or is the client's).
type errorClass struct {
	status  int
	message string
	result  string
	level   slog.Level
	line    string
}

// codes maps each kind of error a turn ends with to its answer. Any other
// error is a provider failure (failedClass).
var codes = map[error]errorClass{
	errBusy:                 {status: http.StatusConflict, message: busy, result: metrics.ResultConflict},
	turn.ErrNoPending:       {status: http.StatusConflict, message: "no pending wake for this session", result: metrics.ResultConflict},
	turn.ErrPendingMismatch: {status: http.StatusConflict, message: "pendingWake does not match this session's pending wake", result: metrics.ResultConflict},
	turn.ErrPodGone:         {status: http.StatusConflict, message: "the pod this wake was pinned to is no longer configured", result: metrics.ResultConflict},
	turn.ErrProviderGone:    {status: http.StatusConflict, message: "the provider this wake was pinned to is no longer configured", result: metrics.ResultConflict},
	// A turn the host's shutdown cut is no provider failure.
	ErrShutdown: {status: http.StatusServiceUnavailable, message: "the host shut down before this turn finished", result: metrics.ResultShutdown,
		level: slog.LevelWarn, line: "turn cut by shutdown"},
}

// failedClass is every other failure: the generic 502 (D5), whose body is
// providerFailed.
var failedClass = errorClass{status: http.StatusBadGateway, result: metrics.ResultProviderFailed, level: slog.LevelError, line: "turn failed"}

// classify finds err's row of codes; a turn whose context the shutdown
// ended is ErrShutdown's, whatever its error.
func classify(ctx context.Context, err error) errorClass {
	for kind, c := range codes {
		if kind != ErrShutdown && errors.Is(err, kind) {
			return c
		}
	}
	if errors.Is(context.Cause(ctx), ErrShutdown) {
		return codes[ErrShutdown]
	}
	return failedClass
}
