package wake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Resume watches again, after a restart, every stored wake whose outcome is
// unknown (waking, loading, stuck) and whose pod configured says is still
// configured. Each watch keeps its wake's clock: it reads the pod at once,
// then every WatchPoll, and gives up WakeWatch after the original request. A
// wake already past WakeWatch gets that one read: what the conductor says is
// fed to the machine, and a wake still not ready is left as it is (nobody
// watched the deadline, so never-ready would be a guess). Resume does not
// wait for the watches.
func (c *Coordinator) Resume(configured func(pod string) bool) error {
	if !c.enter() {
		return ErrClosed
	}
	defer c.wg.Done()
	recs, err := c.records.Records()
	if err != nil {
		return fmt.Errorf("wake: resume: list records: %w", err)
	}
	for _, r := range recs {
		if r.WakeRequestedAt.IsZero() || !wakeInProgress(r.State) || !configured(r.Pod) {
			continue
		}
		c.wg.Add(1) // under Resume's own count
		go func() {
			defer c.wg.Done()
			c.watch(r.Pod, r.WakeRequestedAt, true)
		}()
	}
	if c.takeover > 0 {
		c.wg.Add(1)
		go c.takeOver(configured)
	}
	return nil
}

// watch follows the wake of pod requested at wake while its outcome is
// unknown (D12): it reads the pod every WatchPoll and feeds what the
// conductor says to the machine, until the machine leaves the wake's states
// (ready, or any other outcome), the wake is superseded, Close stops it, or
// wake + WakeWatch passes, when the wake is recorded never-ready. A resumed
// watch reads the pod at once. At most one watch runs per (pod, wake).
func (c *Coordinator) watch(pod string, wake time.Time, resumed bool) {
	key := watchKey{pod: pod, wake: wake.UnixNano()}
	if ok, dup := c.claim(key); ok && !c.takeLease(key) {
		c.unclaim(key)
		return
	} else if !ok {
		if dup {
			c.log.LogAttrs(context.Background(), slog.LevelDebug,
				fmt.Sprintf("wake watch for pod %s: the wake requested at %s is already watched", pod, machines.FormatClock(wake, c.now())),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
		}
		return
	}
	defer c.release(key)
	if resumed {
		c.log.LogAttrs(context.Background(), slog.LevelInfo,
			fmt.Sprintf("wake watch resumed for pod %s: wake requested at %s", pod, machines.FormatClock(wake, c.now())),
			slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
	}
	deadline := wake.Add(c.wakeWatch)
	// late: resumed after the deadline, so the host never watched it pass.
	late := resumed && !c.now().Before(deadline)
	for first := true; ; first = false {
		if !first || !resumed {
			select {
			case <-c.clock.After(min(c.watchPoll, deadline.Sub(c.now()))):
			case <-c.stopping.Done():
				return
			}
		}
		if c.stopping.Err() != nil || !c.following(pod, wake) {
			return
		}
		c.read(pod, wake)
		if c.stopping.Err() != nil || !c.following(pod, wake) {
			return
		}
		now := c.now()
		if now.Before(deadline) {
			continue
		}
		if late {
			c.log.LogAttrs(context.Background(), slog.LevelInfo,
				fmt.Sprintf("wake watch for pod %s: outcome unknown (resumed after the %s watch of the request at %s)",
					pod, minutes(c.wakeWatch), machines.FormatClock(wake, now)),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
			return
		}
		recorded, err := c.feed(pod, wake, machines.Event{Trigger: machines.NeverReadySeen})
		switch {
		case err != nil:
			c.log.LogAttrs(context.Background(), slog.LevelError, err.Error(), slog.String("pod", pod))
		case recorded:
			c.log.LogAttrs(context.Background(), slog.LevelError,
				fmt.Sprintf("wake never-ready for pod %s: not ready %s after the request at %s",
					pod, minutes(now.Sub(wake)), machines.FormatClock(wake, now)),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
		}
		return
	}
}

// read reads the pod once, capped at WatchPoll, and feeds what the
// conductor says to the machine. A failed read is logged and changes
// nothing.
func (c *Coordinator) read(pod string, wake time.Time) {
	ctx, cancel := context.WithTimeout(c.stopping, c.watchPoll)
	defer cancel()
	p, err := c.getPod(ctx, pod)
	if err != nil {
		if c.stopping.Err() == nil {
			c.log.LogAttrs(context.Background(), slog.LevelWarn,
				fmt.Sprintf("wake watch for pod %s: pod read failed: %s", pod, errorText(err)),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
		}
		return
	}
	c.Observe(ctx, pod, p)
}

// following reports whether this host still holds the watch's lease (when
// the store has leases) and pod's record is still on the wake requested at
// wake with its outcome unknown. A superseded wake is logged at debug level:
// the newer wake has its own watch. A record that cannot be read counts as
// followed: the next write decides.
func (c *Coordinator) following(pod string, wake time.Time) bool {
	if !c.leaseHeld(watchKey{pod: pod, wake: wake.UnixNano()}) {
		return false
	}
	r, err := c.records.Record(pod)
	switch {
	case err != nil:
		c.log.LogAttrs(context.Background(), slog.LevelError,
			fmt.Sprintf("wake: record of pod %s: %v", pod, err), slog.String("pod", pod))
		return true
	case !r.WakeRequestedAt.Equal(wake):
		c.superseded(pod, wake)
		return false
	}
	return wakeInProgress(r.State)
}

// superseded logs, at debug level, that a watch stopped because a newer wake
// is on record. It wrote nothing; the newer wake has its own watch.
func (c *Coordinator) superseded(pod string, wake time.Time) {
	c.log.LogAttrs(context.Background(), slog.LevelDebug,
		fmt.Sprintf("wake watch for pod %s stopped: the wake requested at %s is superseded", pod, machines.FormatClock(wake, c.now())),
		slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
}

// errPanicked is a pod read that panicked.
var errPanicked = errors.New("pod read panicked")

// getPod calls the GPU plugin's GetPod; a panic is an error.
func (c *Coordinator) getPod(ctx context.Context, pod string) (p pluginapi.Pod, err error) {
	defer func() {
		if recover() != nil {
			p, err = pluginapi.Pod{}, errPanicked
		}
	}()
	return c.gpu.GetPod(ctx, pod)
}

// errorText describes a pod read's failure without anything that could hold
// a URL: a plugin's LookupError says it in URL-free words; anything else is
// reduced to its class.
func errorText(err error) string {
	var le *pluginapi.LookupError
	switch {
	case errors.As(err, &le):
		return le.Error()
	case errors.Is(err, errPanicked):
		return err.Error()
	default:
		return pluginapi.ErrorClass(err)
	}
}

// minutes is d in whole minutes, for a log line: "35 min".
func minutes(d time.Duration) string { return fmt.Sprintf("%d min", int(d/time.Minute)) }

// claim registers the watch of key. It fails when the Coordinator is closed,
// or when a watch of key runs already (dup).
func (c *Coordinator) claim(key watchKey) (ok, dup bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return false, false
	case c.watching[key]:
		return false, true
	}
	c.watching[key] = true
	return true, false
}

func (c *Coordinator) release(key watchKey) {
	c.releaseLease(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watching, key)
}
