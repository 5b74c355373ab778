package wake

import (
	"context"
	"errors"
	"log/slog"
)

// LineStoreBack is logged (INFO) when a store call of the coordinator works
// again after one failed: its failures in between were logged once, at the
// first (`wake: record of pod P: …`, ERROR), and counted in "unlogged".
const LineStoreBack = "wake: the store answers again"

// storeError is the error of a call to the store, as the coordinator
// returns it: an outage repeats it on every read of a watch and every event,
// so it is logged once until the store answers again (storeFailed).
type storeError struct{ err error }

func (e storeError) Error() string { return e.err.Error() }
func (e storeError) Unwrap() error { return e.err }

// isStoreError reports whether err is a failed store call.
func isStoreError(err error) bool {
	var se storeError
	return errors.As(err, &se)
}

// storeFailed logs msg, a failed store call of pod, at ERROR, unless one
// was logged since the store last answered: then it only counts it.
func (c *Coordinator) storeFailed(ctx context.Context, pod, msg string) {
	c.mu.Lock()
	c.storeFailures++
	first := c.storeFailures == 1
	c.mu.Unlock()
	if first {
		c.log.LogAttrs(ctx, slog.LevelError, msg, slog.String("pod", pod))
	}
}

// storeAnswered notes a store call that worked: after failures it logs
// LineStoreBack with how many went unlogged.
func (c *Coordinator) storeAnswered(ctx context.Context) {
	c.mu.Lock()
	n := c.storeFailures
	c.storeFailures = 0
	c.mu.Unlock()
	if n > 0 {
		c.log.LogAttrs(ctx, slog.LevelInfo, LineStoreBack, slog.Int("unlogged", n-1))
	}
}
