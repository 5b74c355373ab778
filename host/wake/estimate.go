package wake

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/wakeonchat/wakeonchat/machines"
)

// Estimate is how long a wake of pod takes, as the replies quote it: the
// median of its last completed wakes from the wake log
// (machines.EstimateWake), or expected_wake while there is none or no log.
// Estimate(pod).Wake is the figure an event stream reports. It may be
// called from Config.Changed.
func (c *Coordinator) Estimate(pod string) machines.Estimate {
	c.mu.Lock()
	l := c.logs[pod]
	if l != nil && l.tried {
		defer c.mu.Unlock()
		return l.estimate
	}
	c.mu.Unlock()
	// Never read yet, so no event of pod is under way in this goroutine
	// (its first event reads the log before Changed runs): the pod's lock
	// is free to take.
	unlock := c.lockPod(pod)
	defer unlock()
	est, _ := c.wakeLogLocked(c.stopping, pod)
	return est
}

// wakeLog is wakeLogLocked for a caller that does not hold the pod's lock:
// the log as last read, or, when it has not been read (or the last read
// failed), read now under the pod's lock.
func (c *Coordinator) wakeLog(ctx context.Context, pod string) (machines.Estimate, []machines.Wake) {
	c.mu.Lock()
	if l := c.logs[pod]; l != nil && l.tried && (l.loaded || c.wakes == nil) {
		defer c.mu.Unlock()
		return l.estimate, l.wakes
	}
	c.mu.Unlock()
	unlock := c.lockPod(pod)
	defer unlock()
	return c.wakeLogLocked(ctx, pod)
}

// heldWakeLog is pod's estimate and wake log as the Coordinator holds
// them, without a read; expected_wake when it holds none.
func (c *Coordinator) heldWakeLog(pod string) (machines.Estimate, []machines.Wake) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.logs[pod]; l != nil && l.tried {
		return l.estimate, l.wakes
	}
	return machines.EstimateWake(nil, c.pod.Timings().ExpectedWake), nil
}

// wakeLogLocked returns pod's estimate and wake log, reading the log from
// the store when it has not been read (or the last read failed). The
// caller holds the pod's lock. A failed read is logged and keeps the last
// estimate (expected_wake when there is none); the next event reads again.
func (c *Coordinator) wakeLogLocked(ctx context.Context, pod string) (machines.Estimate, []machines.Wake) {
	c.mu.Lock()
	l, ok := c.logs[pod]
	if !ok {
		l = &podLog{}
		c.logs[pod] = l
	}
	if l.loaded || c.wakes == nil {
		if !l.tried {
			l.tried, l.estimate = true, machines.EstimateWake(nil, c.pod.Timings().ExpectedWake)
		}
		defer c.mu.Unlock()
		return l.estimate, l.wakes
	}
	c.mu.Unlock()
	c.readWakeLogLocked(ctx, pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	return l.estimate, l.wakes
}

// readWakeLogLocked reads pod's wake log from the store into its podLog,
// under the pod's lock.
func (c *Coordinator) readWakeLogLocked(ctx context.Context, pod string) {
	ws, err := c.wakes.Wakes(ctx, pod)
	c.mu.Lock()
	l := c.logs[pod]
	l.tried = true
	if err == nil {
		l.loaded, l.wakes = true, ws
		l.estimate = machines.EstimateWake(ws, c.pod.Timings().ExpectedWake)
	} else {
		l.loaded = false
		if l.estimate.Wake == 0 {
			l.estimate = machines.EstimateWake(nil, c.pod.Timings().ExpectedWake)
		}
	}
	c.mu.Unlock()
	if err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelError,
			fmt.Sprintf("wake log unreadable for pod %s: %v; the replies keep the last estimate", pod, err),
			slog.String("pod", pod))
	}
}
