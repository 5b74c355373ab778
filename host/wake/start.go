package wake

import (
	"context"
	"log/slog"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// start performs a wake decision in the background: it sends the start
// request, feeds a refusal or failure back to the machine, logs the operator
// line, and watches a requested start. ctx carries the turn's values but not
// its cancellation.
func (c *Coordinator) start(ctx context.Context, pod string, wake time.Time, caps Capabilities) {
	defer c.wg.Done()
	res, panicked := c.callWake(ctx, pod, caps)
	abandoned := c.abandoned.Err() != nil
	if ev, ok := machines.OutcomeEvent(res, wake, time.Time{}); ok && !abandoned {
		if _, err := c.feed(pod, wake, ev); err != nil {
			c.log.LogAttrs(ctx, slog.LevelError, err.Error(), slog.String("pod", pod))
		}
	}
	level, msg := machines.DescribeWakeResult(pod, res)
	attrs := []slog.Attr{slog.String("pod", pod), slog.Time("wakeRequestedAt", wake)}
	if panicked {
		attrs = append(attrs, slog.Bool("panicked", true))
	}
	if abandoned {
		attrs = append(attrs, slog.Bool("abandoned", true))
	}
	c.log.LogAttrs(ctx, level, msg, attrs...)
	if res != nil && res.Requested && !abandoned {
		c.watch(pod, wake, caps, false)
	}
}

// callWake calls caps.Wake on a context capped at StartTimeout plus slack
// and cancelled if Close gives up on it. A nil caps or a panicking Wake is a
// start without a result: a crashing plugin never crashes the host.
func (c *Coordinator) callWake(ctx context.Context, pod string, caps Capabilities) (res *machines.WakeResult, panicked bool) {
	if caps == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout+startSlack)
	defer cancel()
	defer context.AfterFunc(c.abandoned, cancel)()
	defer func() {
		if recover() != nil {
			res, panicked = nil, true
		}
	}()
	r := caps.Wake(ctx)
	return &machines.WakeResult{
		Requested: r.Requested,
		Status:    r.Status,
		TimedOut:  r.TimedOut,
		TimeoutMs: r.TimeoutMs,
		Error:     r.Error,
	}, false
}
