package wake

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// A watch's lease (Config.Leases) makes it the one watch of its wake among
// the hosts that share the store: the host that decided the wake takes it
// when its start was requested; a host that finds a wake in progress that
// nobody watches, because the host watching it died or stopped, takes it
// over (takeOver). Both go through watch, whose claim takes the lease after
// the in-process claim; a watch that loses its lease (its renewals failed
// for a whole lease) stops at its next look (following).

// leaseName names the lease of a wake's watch.
func leaseName(key watchKey) string {
	return fmt.Sprintf("watch/%s/%s", key.pod, time.Unix(0, key.wake).UTC().Format(time.RFC3339Nano))
}

// takeLease takes the watch's lease; true without leases. A lease another
// host holds is its watch: nothing is logged. A store that fails is logged;
// a later takeover tries again.
func (c *Coordinator) takeLease(key watchKey) bool {
	if c.leases == nil {
		return true
	}
	ok, err := c.leases.TakeLease(c.stopping, leaseName(key))
	if err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelWarn,
			fmt.Sprintf("wake watch for pod %s: its lease could not be taken: %v", key.pod, err),
			slog.String("pod", key.pod), slog.Time("wakeRequestedAt", time.Unix(0, key.wake).UTC()))
	}
	return ok && err == nil
}

// leaseHeld reports whether this host still holds the watch's lease; true
// without leases. A lease lost is logged once, by the watch that stops.
func (c *Coordinator) leaseHeld(key watchKey) bool {
	if c.leases == nil || c.leases.LeaseHeld(leaseName(key)) {
		return true
	}
	c.log.LogAttrs(context.Background(), slog.LevelWarn,
		fmt.Sprintf("wake watch for pod %s stopped: its lease lapsed (the store did not renew it); another host takes it over", key.pod),
		slog.String("pod", key.pod), slog.Time("wakeRequestedAt", time.Unix(0, key.wake).UTC()))
	return false
}

// releaseLease gives the watch's lease up, for a host that finds the wake
// still in progress to take over (a watch stopped by Close).
func (c *Coordinator) releaseLease(key watchKey) {
	if c.leases == nil {
		return
	}
	// A watch that Close stopped releases its lease: until Close gives up.
	if err := c.leases.ReleaseLease(c.abandoned, leaseName(key)); err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelWarn,
			fmt.Sprintf("wake watch for pod %s: its lease could not be released (it lapses instead): %v", key.pod, err),
			slog.String("pod", key.pod))
	}
}

// unclaim drops the in-process claim of a watch that did not get its
// lease.
func (c *Coordinator) unclaim(key watchKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watching, key)
}

// takeOver looks, every Takeover until Close, for the wakes in progress
// whose pod is configured, that this host does not watch and whose watch
// still has time to run, and watches each whose lease it gets: the watch
// of a host that died. A wake younger than its start's own cap is left to
// the host that decided it, which takes the lease when its start was
// requested. Its waits are on the wall clock: leases are.
func (c *Coordinator) takeOver(configured func(pod string) bool) {
	defer c.wg.Done()
	tick := time.NewTicker(c.takeover)
	defer tick.Stop()
	grace := c.startTimeout + startSlack
	for {
		select {
		case <-c.stopping.Done():
			return
		case <-tick.C:
		}
		recs, err := c.records.Records(c.stopping)
		if err != nil {
			c.log.LogAttrs(context.Background(), slog.LevelWarn,
				fmt.Sprintf("wake watch takeover: list records: %v", err))
			continue
		}
		now := c.now()
		for _, r := range recs {
			w := r.WakeRequestedAt
			switch {
			case w.IsZero() || !machines.InProgress(r.State) || !configured(r.Pod):
				continue
			case now.Sub(w) < grace, !now.Before(w.Add(c.wakeWatch)):
				continue // its own host's, or too late to record never-ready
			case c.isWatching(watchKey{pod: r.Pod, wake: w.UnixNano()}):
				continue
			}
			if !c.enter() {
				return
			}
			go func() {
				defer c.wg.Done()
				c.watch(r.Pod, w, true)
			}()
		}
	}
}

// isWatching reports whether this host runs the watch of key.
func (c *Coordinator) isWatching(key watchKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watching[key]
}
