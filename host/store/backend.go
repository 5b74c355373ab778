package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// Backend is the host's durable state, whichever database keeps it: the
// embedded bbolt file (*Store, the default) or PostgreSQL, which several
// replicas share (host/store/postgres). Each field is one capability, for
// the caller that uses it (Records and WakeLog for host/wake, History for
// host/agent, Pendings and Turns for host/chat, ...); a backend's Backend
// method fills them, and host/store/storetest runs the same cases against
// each.
//
// Every method of every field is safe for concurrent use, and after Close
// every method returns an error wrapping ErrClosed. Every method that reaches
// the database takes a context: when it ends, the call returns an error
// wrapping its error (context.Canceled, context.DeadlineExceeded) without
// having written anything.
type Backend struct {
	Records  Records
	WakeLog  WakeLog
	History  BoundedHistory
	Pendings Pendings
	Retainer Retainer
	Leases   Leases
	// Turns is nil for a backend one host holds (bbolt): that host's
	// in-process slots are the rule.
	Turns Turns
	// Changes is nil for a backend one host holds (bbolt): no other host
	// changes its records.
	Changes Changes
	// Close stops the background work (pruning, leases, the listener) and
	// releases the database.
	Close func() error
}

// Records keeps one machines.Record per pod: what host/wake reads, decides
// on and writes.
type Records interface {
	// Record returns pod's record, machines.NewRecord(pod) when none is
	// stored.
	Record(ctx context.Context, pod string) (machines.Record, error)
	// PutRecord stores r under r.Pod, replacing what was there.
	PutRecord(ctx context.Context, r machines.Record) error
	// Records returns every stored record, sorted by pod.
	Records(ctx context.Context) ([]machines.Record, error)
	// UpdateRecord is the wake policy's read-decide-write: it runs fn on
	// pod's record and stores what fn returns unless it is Equal to what fn
	// was given (most asks change nothing, and cost no write); a change is
	// decided under a lock on the pod that holds across every host sharing
	// the store. When fn also returns a wake log entry, a changed record is
	// stored with it in one transaction, as PutRecordWake does (an entry
	// with an unchanged record is not stored). fn runs inside the store's
	// transaction, so it must only decide. It returns the record fn was
	// given and the one stored after, as a read would give it back: the
	// entry fn returned was stored exactly when they differ. When fn fails
	// nothing is stored and fn's error is returned as it is. fn must not
	// call the store.
	UpdateRecord(ctx context.Context, pod string, fn func(machines.Record) (machines.Record, *machines.Wake, error)) (before, after machines.Record, err error)
}

// WakeLog keeps each pod's log of wakes: one machines.Wake per wake whose
// outcome is known (its phases, outcome and whether it served a turn), the
// newest WakeLogSize by request time. An entry is only ever stored with the
// record whose change it logs, in one transaction, so that a crash never
// leaves an outcome in the record that the log lacks. The estimate of how
// long a pod's wakes take (host/wake) and the status page read it.
type WakeLog interface {
	// PutRecordWake stores r, as PutRecord does, and w in r.Pod's wake
	// log, in one transaction: w replaces the entry of the same wake (its
	// RequestedAt) or is added, and the log then keeps its newest
	// WakeLogSize entries. An empty w.Pod is r.Pod; another is an error,
	// and so is a zero RequestedAt.
	PutRecordWake(ctx context.Context, r machines.Record, w machines.Wake) error
	// Wakes returns pod's wake log, oldest first (by request time), its
	// times in UTC; none for a pod with no logged wake.
	Wakes(ctx context.Context, pod string) ([]machines.Wake, error)
}

// History keeps each session's turns: what host/agent sends with a turn and
// stores after it. A session keeps only its newest turns whose messages fit
// the backend's session budget (Options.SessionHistoryBytes, [store]
// session_history_bytes), so that what the store holds is bounded by the
// sessions it keeps times that budget.
type History interface {
	// History returns the last last messages of session, oldest first; nil
	// when last <= 0 or the session is unknown.
	History(ctx context.Context, session string, last int) ([]Message, error)
	// AppendTurn appends a user message and the assistant's reply, whole or
	// not at all, stamping the session's last turn with the store's clock.
	// In the same transaction it deletes the session's oldest turns until
	// its messages take at most the session budget as stored; a turn that
	// alone takes more is not kept, and nor is anything older (the session
	// starts afresh rather than with a hole where its last turn was).
	AppendTurn(ctx context.Context, session string, user, assistant Message) error
}

// BoundedHistory is a History that can stop reading a session once its
// messages' contents pass a byte cap; every backend's is one. host/agent
// reads with it when its History has it, so that a session of huge turns
// costs what is sent.
type BoundedHistory interface {
	History
	// HistoryWithin is History(session, last) from the newest message back
	// to the first whose content would take their total past maxBytes,
	// which ends them (nothing older: no hole); nil when maxBytes < 0. A
	// session of huge messages costs what fits: bbolt decodes at most one
	// more, PostgreSQL sends nothing more.
	HistoryWithin(ctx context.Context, session string, last, maxBytes int) ([]Message, error)
}

// Pendings keeps each session's pending-wake marker (#715): what host/chat
// leaves for a wakeMode "wait" turn and takes on its resume.
type Pendings interface {
	// Pending returns session's marker; ok is false when it has none, or
	// only an expired one.
	Pending(ctx context.Context, session string) (p Pending, ok bool, err error)
	// PutPending sets session's marker, replacing any other.
	PutPending(ctx context.Context, session string, p Pending) error
	// TakePending returns and deletes session's marker when its key is key
	// (ErrNoPending, ErrPendingMismatch otherwise); of concurrent takes
	// exactly one succeeds.
	TakePending(ctx context.Context, session, key string) (Pending, error)
	// DeletePending deletes session's marker; none is not an error.
	DeletePending(ctx context.Context, session string) error
}

// Retainer bounds what the store keeps (docs/operations.md, store.history_*).
type Retainer interface {
	// Prune deletes, as of now, the sessions r no longer keeps and the
	// expired pending wakes, in small batches; it stops between batches
	// when ctx ends.
	Prune(ctx context.Context, now time.Time, r Retention) (Pruned, error)
	// StartPruning runs Prune in the background every interval until
	// Close, logging LinePruned and LinePruneFailed, and gives what each
	// pass that did something did to pruned (nil: nobody), after its
	// line. It does not block: each pass has a context that Close ends.
	StartPruning(r Retention, interval time.Duration, log *slog.Logger, pruned func(Pruned)) error
}

// Backend is s's capabilities: all but Turns and Changes, which a store one
// host holds has no use for.
func (s *Store) Backend() Backend {
	return Backend{
		Records: s, WakeLog: s, History: s, Pendings: s, Retainer: s, Leases: s,
		Close: s.Close,
	}
}

// Leases hold a name for one store at a time, across every host sharing the
// database: host/wake's watch of a wake is one ("one watch per wake across
// replicas"). A lease lives while the store that took it renews it, which
// it does in the background until Close; a host that dies stops renewing,
// and its leases can be taken once they expire (PostgreSQL: [store] lease
// after the last renewal). The bbolt store is held by one process, so its
// leases are only that process's.
type Leases interface {
	// TakeLease takes name for this store unless a store (this one
	// included) holds it; ok is false then.
	TakeLease(ctx context.Context, name string) (ok bool, err error)
	// LeaseHeld reports whether this store still holds name: taken, not
	// released, and renewed recently enough that no other store can have
	// taken it since. It reads what the store knows, never the database.
	LeaseHeld(name string) bool
	// ReleaseLease gives name up, for any store to take. Releasing a lease
	// this store does not hold does nothing.
	ReleaseLease(ctx context.Context, name string) error
}

// Turns holds the one turn in flight per session (host/chat answers another
// turn of the session 409) across every host sharing the database. A host
// takes its session's turn after its own in-process slot. The bbolt store,
// which one host holds, has no Turns: that host's slots are the rule.
type Turns interface {
	// TakeTurn claims session's turn for this store. It returns false at
	// once while another turn of the session runs, on any host, and waits
	// (until ctx ends, then false) while one is finishing: replied to, its
	// turn being stored.
	TakeTurn(ctx context.Context, session string) (bool, error)
	// FinishTurn marks this store's turn of session as replied to.
	FinishTurn(ctx context.Context, session string) error
	// ReleaseTurn frees session's turn. A turn a host never released
	// (it died) lapses after the lease.
	ReleaseTurn(ctx context.Context, session string) error
}

// RecordChange is a change of a pod's record that another host sharing the
// store made (Changes), for the event stream of this one.
type RecordChange struct {
	Before, After machines.Record
	// Resync: the host lost touch with the database for a while, so changes
	// may have been missed; After is the record as stored now, Before is
	// unknown (zero). One comes for every stored record.
	Resync bool
}

// Changes tells a host of the record changes the other hosts sharing the
// store make (PostgreSQL: LISTEN/NOTIFY), within about a second. Its own
// changes it knows already (host/wake's Config.Changed). The bbolt store,
// which one host holds, has no Changes.
type Changes interface {
	// OnRecordChange calls fn, on a goroutine of the store's, with every
	// change another host makes, in the order they were stored, until
	// Close. The later changes wait while fn runs: it may read the store
	// (the listener has a connection of its own), but should be quick.
	// Only one fn may be set. ctx bounds the wait for the first LISTEN;
	// the listener runs on until Close.
	OnRecordChange(ctx context.Context, fn func(RecordChange)) error
	// Following reports whether the listener is hearing every change now:
	// it is connected and, after a reconnection, has handed fn the Resync
	// of every record. While it is not, a host's records may be missing
	// the other hosts' changes.
	Following() bool
}
