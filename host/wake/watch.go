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
// unknown. Each watch keeps its wake's clock: it reads the pod at once, then
// every WatchPoll, and gives up WakeWatch after the original request. A wake
// already past WakeWatch gets that one read: a readySince of the wake is
// recorded, anything else leaves the outcome unknown (nobody watched the
// deadline, so never-ready would be a guess). capsFor returns a pod's
// capabilities, or nil to skip the pod. Resume does not wait for the watches.
func (c *Coordinator) Resume(capsFor func(pod string) Capabilities) error {
	if !c.enter() {
		return ErrClosed
	}
	defer c.wg.Done()
	recs, err := c.records.Records()
	if err != nil {
		return fmt.Errorf("wake: resume: list records: %w", err)
	}
	for _, r := range recs {
		if r.WakeRequestedAt.IsZero() || r.Outcome != machines.OutcomeNone {
			continue
		}
		caps := capsFor(r.Pod)
		if caps == nil {
			continue
		}
		c.wg.Add(1) // under Resume's own count
		go func() {
			defer c.wg.Done()
			c.watch(r.Pod, r.WakeRequestedAt, caps, true)
		}()
	}
	return nil
}

// watch follows the wake of pod requested at wake until it is ready, gives up
// at wake + WakeWatch, is superseded, or Close stops it (D12). A resumed watch
// reads the pod at once. At most one watch runs per (pod, wake).
func (c *Coordinator) watch(pod string, wake time.Time, caps Capabilities, resumed bool) {
	key := watchKey{pod: pod, wake: wake.UnixNano()}
	if ok, dup := c.claim(key); !ok {
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
		if c.stopping.Err() != nil {
			return
		}
		if !c.current(pod, wake) {
			c.superseded(pod, wake)
			return
		}
		since, ready, err := c.poll(caps, wake)
		if c.stopping.Err() != nil {
			return
		}
		now := c.now()
		switch {
		case err != nil:
			c.log.LogAttrs(context.Background(), slog.LevelWarn,
				fmt.Sprintf("wake watch for pod %s: pod read failed: %s", pod, errorText(err)),
				slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
		case ready:
			if c.settle(pod, wake, machines.Event{Trigger: machines.ReadySinceSeen, ReadySince: since}, slog.LevelInfo,
				fmt.Sprintf("wake ready for pod %s: ready since %s", pod, machines.FormatClock(since, now))) ||
				!now.Before(deadline) {
				return
			}
			continue // the record could not be written: read again next poll
		}
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
		c.settle(pod, wake, machines.Event{Trigger: machines.NeverReadySeen}, slog.LevelError,
			fmt.Sprintf("wake never-ready for pod %s: not ready %s after the request at %s",
				pod, minutes(now.Sub(wake)), machines.FormatClock(wake, now)))
		return
	}
}

// settle feeds an outcome of the watched wake and logs msg when it was
// recorded. It reports whether the watch is over: recorded, or superseded.
func (c *Coordinator) settle(pod string, wake time.Time, ev machines.Event, level slog.Level, msg string) bool {
	recorded, err := c.feed(pod, wake, ev)
	if err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelError, err.Error(), slog.String("pod", pod))
		return false
	}
	if !recorded {
		c.superseded(pod, wake)
		return true
	}
	c.log.LogAttrs(context.Background(), level, msg, slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
	return true
}

// superseded logs, at debug level, that a watch stopped because a newer wake
// is on record. It wrote nothing; the newer wake has its own watch.
func (c *Coordinator) superseded(pod string, wake time.Time) {
	c.log.LogAttrs(context.Background(), slog.LevelDebug,
		fmt.Sprintf("wake watch for pod %s stopped: the wake requested at %s is superseded", pod, machines.FormatClock(wake, c.now())),
		slog.String("pod", pod), slog.Time("wakeRequestedAt", wake))
}

// current reports whether pod's record is still on the wake requested at
// wake. A record that cannot be read counts as current: the next write
// decides.
func (c *Coordinator) current(pod string, wake time.Time) bool {
	r, err := c.records.Record(pod)
	if err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelError,
			fmt.Sprintf("wake: record of pod %s: %v", pod, err), slog.String("pod", pod))
		return true
	}
	return r.WakeRequestedAt.Equal(wake)
}

// poll reads the pod once and reports its readySince when it belongs to the
// wake: RFC 3339, no earlier than the wake minus ReadySlack. An earlier one is
// a previous boot's, and the watch keeps polling.
func (c *Coordinator) poll(caps Capabilities, wake time.Time) (time.Time, bool, error) {
	ctx, cancel := context.WithTimeout(c.stopping, c.watchPoll)
	defer cancel()
	p, err := readPod(ctx, caps)
	if err != nil {
		return time.Time{}, false, err
	}
	if p.ReadySince == "" {
		return time.Time{}, false, nil
	}
	since, err := time.Parse(time.RFC3339, p.ReadySince)
	if err != nil || since.Before(wake.Add(-c.readySlack)) {
		return time.Time{}, false, nil
	}
	return since, true, nil
}

// errPanicked is a ReadPod that panicked.
var errPanicked = errors.New("pod read panicked")

// readPod calls caps.ReadPod; a panic is an error.
func readPod(ctx context.Context, caps Capabilities) (p pluginapi.Pod, err error) {
	defer func() {
		if recover() != nil {
			p, err = pluginapi.Pod{}, errPanicked
		}
	}()
	return caps.ReadPod(ctx)
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
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watching, key)
}
