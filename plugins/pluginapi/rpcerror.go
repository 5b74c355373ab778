package pluginapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// callerEnded returns the caller's context error when the call failed
// because the caller's ctx ended, else nil. gRPC's DeadlineExceeded
// always is the caller's deadline (the plugin's deadline is derived from
// it and may fire a hair earlier than the caller's own clock); Canceled is
// the caller's only when its ctx is done, since go-plugin also cancels the
// connection of a plugin process that exited.
func callerEnded(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if status.Code(err) == codes.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return nil
}

// rpcError wraps a gRPC error from a plugin call. When the caller's ctx
// ended, the error wraps context.Canceled or context.DeadlineExceeded
// (errors.Is works). Otherwise it keeps the gRPC status, so
// status.Code(err) tells a plugin that died (codes.Unavailable, or
// codes.Canceled when go-plugin closed the connection of an exited plugin)
// from one that answered with an error.
func rpcError(ctx context.Context, op string, err error) error {
	if ended := callerEnded(ctx, err); ended != nil {
		return fmt.Errorf("plugin %s: %w", op, ended)
	}
	return fmt.Errorf("plugin %s: %w", op, err)
}
