package app

import (
	"context"
	"errors"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// lineElsewhereUnread is logged (WARN) when a change another host made
// could not be read: this host's event streams and pod state metric show
// the pod as before until its next change.
const lineElsewhereUnread = "record change from another host unread"

// followElsewhere has the store tell this host of the record changes the
// other hosts sharing it make (store.Changes; a store one host holds has
// none): each reaches the event hub, so every replica's streams and held
// requests see it, and the pod state metric, within about a second of the
// other host's commit.
func (a *App) followElsewhere(ctx context.Context) error {
	if a.store.Changes == nil {
		return nil
	}
	return a.store.Changes.OnRecordChange(ctx, a.changedElsewhere)
}

// following is the coordinator's Following for a store whose changes are
// ch: nil for a store this host alone writes.
func following(ch store.Changes) func() bool {
	if ch == nil {
		return nil
	}
	return ch.Following
}

// changedElsewhere is the store's OnRecordChange. The coordinator reads the
// pod's record and wake log again under the pod's lock, so the hub gets
// the newest record in order with this host's own changes, and the
// estimate counts the other host's wakes.
func (a *App) changedElsewhere(rc store.RecordChange) {
	pod := rc.After.Pod
	err := a.coord.Elsewhere(pod, func(rec machines.Record) {
		if a.hub.Elsewhere(rec, a.clock.Now()) {
			a.metrics.PodRecord(rec)
		}
	})
	if err != nil && !errors.Is(err, wake.ErrClosed) {
		a.log.Warn(lineElsewhereUnread, "pod", pod, "err", err)
	}
}
