package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/turn"
)

// Every error a turn ends with has one answer: the service's conflicts a
// client can correct are 409s naming what was wrong, a turn the shutdown
// cut is a 503, and anything else is the generic 502 (D5), logged once.
func TestErrorTable(t *testing.T) {
	t.Parallel()
	cut, cancel := context.WithCancelCause(context.Background())
	cancel(ErrShutdown)
	conflict := func(msg string) errorClass {
		return errorClass{status: http.StatusConflict, message: msg, result: metrics.ResultConflict}
	}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want errorClass
	}{
		{"no pending wake", context.Background(), turn.ErrNoPending, conflict("no pending wake for this session")},
		{"another key", context.Background(), turn.ErrPendingMismatch, conflict("pendingWake does not match this session's pending wake")},
		{"pod gone", context.Background(), turn.ErrPodGone, conflict("the pod this wake was pinned to is no longer configured")},
		{"provider gone, wrapped", context.Background(), fmt.Errorf("resume: %w", turn.ErrProviderGone), conflict("the provider this wake was pinned to is no longer configured")},
		{"cut by the shutdown", cut, errors.New("context canceled"), errorClass{status: http.StatusServiceUnavailable,
			message: "the host shut down before this turn finished", result: metrics.ResultShutdown, level: slog.LevelWarn, line: "turn cut by shutdown"}},
		{"any other failure", context.Background(), errors.New("provider down"), errorClass{status: http.StatusBadGateway,
			result: metrics.ResultProviderFailed, level: slog.LevelError, line: "turn failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, classify(tt.ctx, tt.err), cmp.AllowUnexported(errorClass{})); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}
