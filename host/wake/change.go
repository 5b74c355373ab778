package wake

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// How a pod's record changes: the record this process holds of each pod,
// and the one path every event and stamp takes to the store.

// learn keeps rec, from a plain read outside the pod's lock, as the record
// this process knows of its pod when it knows none yet. A known record is
// replaced only under the pod's lock (remember), in the order of the
// changes: a plain read may be older than a change stored meanwhile.
func (c *Coordinator) learn(pod string, rec machines.Record) {
	c.mu.Lock()
	if _, ok := c.known[pod]; !ok {
		c.known[pod] = rec
	}
	c.mu.Unlock()
}

// held is the record this process holds of pod, when that is the record
// as stored: it has read or stored one, and no other host's change can
// have gone unheard (Config.Following).
func (c *Coordinator) held(pod string) (machines.Record, bool) {
	if c.hearsAll != nil && !c.hearsAll() {
		return machines.Record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.known[pod]
	return rec, ok
}

// forget drops the record this process holds of pod: the next event reads
// the stored one.
func (c *Coordinator) forget(pod string) {
	c.mu.Lock()
	delete(c.known, pod)
	c.mu.Unlock()
}

// remember keeps rec, as stored now, as the record this process last knew
// of its pod, under the pod's lock: what events are decided on (held) and
// what the idle stop reads (saw).
func (c *Coordinator) remember(pod string, rec machines.Record) {
	c.mu.Lock()
	c.known[pod] = rec
	c.mu.Unlock()
	c.saw(rec)
}

// apply runs ev for pod (update): read the record, stamp ev.At, decide,
// and persist a change under the pod's lock.
func (c *Coordinator) apply(ctx context.Context, pod string, ev machines.Event) (machines.Decision, machines.Record, error) {
	d, next, _, err := c.update(ctx, pod, ev, nil)
	return d, next, err
}

// update runs ev for pod: take the record; when admit says ev is for it
// (nil admits every record), stamp ev.At and the pod's estimate, decide,
// and persist what changed, with the wake log entry the change makes
// (machines.LogWake) in the same transaction. applied is false when admit
// turned ev away; nothing was written then.
//
// Most events change nothing (an ask while the pod wakes: "still
// waking"): they are decided on the record this process holds (held), or
// on a plain read when it holds none that is current, take no lock and
// write nothing, as if decided at the moment the record was last stored,
// so that the asks of a pod neither queue behind each other nor cost a
// round trip each on PostgreSQL. An event that changes the record is
// decided again on the record as it is under the pod's lock, in this
// process (lockPod) and across every host sharing the store
// (Records.UpdateRecord): change.
func (c *Coordinator) update(ctx context.Context, pod string, ev machines.Event, admit func(machines.Record) bool) (d machines.Decision, next machines.Record, applied bool, err error) {
	est, _ := c.wakeLog(ctx, pod)
	rec, ok := c.held(pod)
	if !ok {
		if rec, err = c.records.Record(ctx, pod); err != nil {
			return machines.Decision{}, machines.Record{}, false, storeError{fmt.Errorf("wake: record of pod %s: %w", pod, err)}
		}
		c.storeAnswered(ctx)
		c.learn(pod, rec)
	}
	if admit != nil && !admit(rec) {
		return machines.Decision{}, rec, false, nil
	}
	seen := ev
	seen.Estimate = est
	d, next, _, err = c.decide(rec, seen)
	switch {
	case err != nil:
		return machines.Decision{}, machines.Record{}, false, err
	case next.Equal(rec):
		return d, next, true, nil
	}
	return c.change(ctx, pod, ev, admit)
}

// change is update for an event that changed the record on a plain read:
// under the pod's lock it decides again on the record as stored and stores
// what changed (commitLocked).
func (c *Coordinator) change(ctx context.Context, pod string, ev machines.Event, admit func(machines.Record) bool) (d machines.Decision, next machines.Record, applied bool, err error) {
	unlock := c.lockPod(pod)
	defer unlock()
	// update read the log (or tried to) for this event; an entry written
	// since is in what the Coordinator holds. Not in fn: fn must not call
	// the store.
	var logged []machines.Wake
	ev.Estimate, logged = c.heldWakeLog(pod)
	e, after, err := c.commitLocked(ctx, pod, func(rec machines.Record) (e edit, err error) {
		if applied = admit == nil || admit(rec); !applied {
			return edit{next: rec}, nil
		}
		if e.d, e.next, ev, err = c.decide(rec, ev); err != nil {
			return edit{}, err
		}
		e.ev = ev
		if w, ok := machines.LogWake(logged, rec, e.next); ok && c.wakes != nil {
			// The outcome and its log entry are stored together.
			e.entry = &w
		}
		return e, nil
	})
	switch {
	case isStoreError(err):
		return machines.Decision{}, machines.Record{}, false, fmt.Errorf("wake: update record of pod %s: %w", pod, err)
	case err != nil:
		return machines.Decision{}, machines.Record{}, false, err
	}
	return e.d, after, applied, nil
}

// edit is what a change makes of a pod's record: the record to store, the
// wake log entry stored with it (nil for none), and the decision and event
// that made it, for Changed and the wake-ready line.
type edit struct {
	next  machines.Record
	entry *machines.Wake
	d     machines.Decision
	ev    machines.Event
}

// commitLocked stores fn's edit of pod's record: the one way the
// Coordinator changes a record, for an event (change) as for an answer's
// stamp (writeStamp). The caller holds the pod's in-process lock;
// Records.UpdateRecord holds the store's across fn, which gets the record
// as stored and must not call the store. fn's error is returned as it is;
// a failed store call as a storeError, which the caller words and logs
// once per outage. Once the store answered: a change stored has the wake
// log read again when it logged a wake, becomes the record this process
// holds (remember), goes to Changed and logs the wake-ready line, still
// under the in-process lock, so one pod's Changed calls come in the order
// of its changes; a record fn left as it was is the newest this process
// knows, and is held.
func (c *Coordinator) commitLocked(ctx context.Context, pod string, fn func(machines.Record) (edit, error)) (edit, machines.Record, error) {
	var e edit
	var fnErr error
	before, after, err := c.records.UpdateRecord(ctx, pod, func(rec machines.Record) (machines.Record, *machines.Wake, error) {
		e, fnErr = fn(rec)
		return e.next, e.entry, fnErr
	})
	switch {
	case fnErr != nil:
		return edit{}, machines.Record{}, fnErr
	case err != nil:
		return edit{}, machines.Record{}, storeError{err}
	}
	c.storeAnswered(ctx)
	// Changed or not, the record under the lock is the newest this process
	// knows.
	c.remember(pod, after)
	if after.Equal(before) {
		return e, after, nil
	}
	if e.entry != nil {
		c.readWakeLogLocked(ctx, pod)
	}
	if c.changed != nil {
		c.changed(Change{Before: before, After: after, Event: e.ev, Wake: e.entry})
	}
	if e.d.To == machines.Ready && machines.InProgress(e.d.From) {
		c.log.LogAttrs(context.Background(), slog.LevelInfo,
			fmt.Sprintf("wake ready for pod %s: ready since %s", pod, machines.FormatClock(after.ReadyAt, e.ev.At)),
			slog.String("pod", pod), slog.Time("wakeRequestedAt", after.WakeRequestedAt))
	}
	return e, after, nil
}

// decide decides ev on rec, stamping ev.At unless the caller did (a
// probe's answer is stamped when the watch saw it): the new record, which
// update stores unless it is unchanged.
func (c *Coordinator) decide(rec machines.Record, ev machines.Event) (machines.Decision, machines.Record, machines.Event, error) {
	if ev.At.IsZero() {
		ev.At = c.now()
	}
	d, next, err := c.pod.Decide(rec, ev)
	if err != nil {
		return machines.Decision{}, machines.Record{}, ev, fmt.Errorf("wake: decide %s for pod %s: %w", ev.Trigger, rec.Pod, err)
	}
	// Most asks in a window change nothing ("still waking"), and most
	// answered turns find the pod ready: update writes nothing for them,
	// as a write, and its fsync, would only slow every reply down.
	return d, next, ev, nil
}

// feed runs an outcome event of the wake requested at wake. When the record
// is on another wake (superseded) it writes nothing and returns false; the
// machine would drop the event too, and the caller stops.
func (c *Coordinator) feed(ctx context.Context, pod string, wake time.Time, ev machines.Event) (bool, error) {
	ev.Wake = wake
	_, _, applied, err := c.update(ctx, pod, ev, func(rec machines.Record) bool { return rec.WakeRequestedAt.Equal(wake) })
	return applied, err
}
