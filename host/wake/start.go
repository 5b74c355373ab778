package wake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// start performs a wake decision in the background: it sends the start
// request, feeds a refusal or failure back to the machine, logs the operator
// line, and watches a requested start. A start Close gave up on (abandoned)
// feeds nothing and watches nothing. ctx carries the turn's values but not
// its cancellation.
func (c *Coordinator) start(ctx context.Context, pod string, wake time.Time) {
	defer c.wg.Done()
	res, panicked := c.callStart(ctx, pod)
	abandoned := c.abandoned.Err() != nil
	if ev, ok := outcomeEvent(res, wake, time.Time{}); ok && !abandoned {
		if _, err := c.feed(c.abandoned, pod, wake, ev); err != nil {
			c.log.LogAttrs(ctx, slog.LevelError, err.Error(), slog.String("pod", pod))
		}
	}
	level, msg := describeStart(pod, res, c.credentials[pod])
	if abandoned && res != nil && res.Lost {
		// The lost-answer line says the pod is watched; after Close gave up
		// nothing watches it here.
		level, msg = abandonedLine(pod, res)
	}
	attrs := []slog.Attr{slog.String("pod", pod), slog.Time("wakeRequestedAt", wake)}
	if panicked {
		attrs = append(attrs, slog.Bool("panicked", true))
	}
	if abandoned {
		attrs = append(attrs, slog.Bool("abandoned", true))
	}
	c.log.LogAttrs(ctx, level, msg, attrs...)
	if c.started != nil {
		c.started(pod)
	}
	if res != nil && res.Requested && !abandoned {
		c.watch(pod, wake, false)
	}
}

// abandonedLine is the operator line of a start whose answer was lost
// because Close stopped waiting for it: neither its outcome is recorded nor
// is the pod watched; the wake stays on record, waking, so the next host's
// Resume watches it. A start that got its answer as Close gave up keeps the
// line of its answer, which claims no watch, with abandoned=true.
func abandonedLine(pod string, res *pluginapi.StartResult) (slog.Level, string) {
	return slog.LevelWarn, fmt.Sprintf("wake start abandoned for pod %s at shutdown: its answer was lost (%s); not recorded and not watched, the wake stays on record for the next host start", pod, res.Error)
}

// callStart asks the GPU plugin to start pod, on a context capped at
// StartTimeout plus slack and cancelled if Close gives up on it. A panicking
// plugin call is a start without a result: a crashing plugin never crashes
// the host. An error from the plugin means its answer was lost with the
// request in its hands (it stopped during the call, or the host stopped
// waiting): whether the request went out is unknown, so, like the client
// timeout of D2, it is in flight and watched (#684). So is a start the
// plugin reports Lost: written whole, its connection then cut.
func (c *Coordinator) callStart(ctx context.Context, pod string) (res *pluginapi.StartResult, panicked bool) {
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout+startSlack)
	defer cancel()
	defer context.AfterFunc(c.abandoned, cancel)()
	defer func() {
		if recover() != nil {
			res, panicked = nil, true
		}
	}()
	r, err := c.gpu.StartPod(ctx, pod)
	if err != nil {
		return &pluginapi.StartResult{Requested: true, Lost: true, Error: lostClass(err)}, false
	}
	r.Lost = r.Requested && r.Lost
	if r.Lost {
		// Written whole, then cut: in flight and watched, like an answer
		// lost in the host.
		r.Error = "the connection to the conductor was cut after the request was sent (" + r.Error + ")"
	}
	return &r, false
}

// lostClass says in a few words why a start's answer was lost, without the
// error's text, which may hold a URL.
func lostClass(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the host stopped waiting (DeadlineExceeded)"
	case errors.Is(err, context.Canceled):
		return "the host stopped waiting (Canceled)"
	default:
		return "the GPU plugin stopped during the call"
	}
}
