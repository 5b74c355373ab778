// Package store is wake-on-chat's durable state. Backend is what the rest of
// the host sees: one narrow interface per capability (Records for host/wake,
// History for host/agent, Pendings for host/chat, Retainer for the pruning,
// and Turns and Changes only for a store several hosts share), each call
// with the caller's context; two backends fill it: this package's *Store,
// an embedded bbolt database in the host's data_dir that survives a restart
// and is the default, and host/store/postgres, a PostgreSQL database several
// replicas share. host/store/storetest is the
// conformance suite both pass. Either keeps three things:
//
//   - each session's chat history, as whole turns (a user message and the
//     assistant's reply, stored together or not at all);
//   - each session's pending wake marker, the note a wakeMode "wait" turn
//     leaves so the client can come back with its prompt once the model is
//     ready;
//   - one wake-policy record (a machines.Record) per pod;
//   - each pod's wake log: one machines.Wake per wake whose outcome is known
//     (its phases, outcome and whether it served a turn), the newest
//     WakeLogSize of them, written with the record in one transaction
//     (PutRecordWake). The estimate of how long the pod's wakes take is read
//     from it.
//
// What it must never store: the prompt of a pending turn (a Pending has no
// field for it by design; the client holds its prompt until the model is
// ready), and secrets of any kind: API keys, tokens, endpoint or proxy URLs.
// The store cannot tell a secret from a chat message, so keeping them out is
// the caller's duty.
//
// The rest of this comment is about *Store. The bucket layout, all keys raw
// bytes of the given strings:
//
//	sessions/<session>/messages  nested buckets; keys are big-endian uint64
//	                             sequence numbers (NextSequence), values are
//	                             JSON Messages, oldest first
//	sessions/<session>/lastTurn  when the last turn was stored: big-endian
//	                             Unix nanoseconds (absent in sessions stored
//	                             before it was kept)
//	pending/<session>            JSON Pending
//	pods/<pod>                   JSON machines.Record
//	wakes/<pod>/<requested>      JSON machines.Wake; the key is the wake's
//	                             request time, big-endian Unix nanoseconds
//	                             (absent in stores from before the log)
//
// AppendTurn keeps a session within its budget (Options.SessionHistoryBytes):
// in its transaction it walks the session back from the newest message,
// reading only the sizes of the ones kept, and deletes the oldest turns past
// the budget. History reads only the last N messages with a cursor from the
// end. Retention bounds the sessions (retention.go): Prune deletes whole sessions by
// the age of their last turn and beyond a count, and the pending wakes older
// than Options.PendingTTL (which already read as absent before that), in
// write transactions of a bounded size; StartPruning runs it in the
// background until Close. bbolt never shrinks the file: freed pages are
// reused, so a pruned store stops growing but keeps its size.
//
// Times are stored in UTC (monotonic clock readings dropped), so a value read
// back is Equal to the one written, but its Location is UTC.
//
// Open checks an existing file whole before bbolt opens it for writing
// (check.go, and internal/filecheck for the check itself): bbolt trusts its
// file, and a truncated or damaged one crashes the process inside bbolt
// (SIGBUS from the memory map, or a failed assertion in a goroutine of
// bbolt's own, neither of which a caller can recover), so the check runs in
// a short child process, the executable started again, where a crash only
// says the file is corrupt. A damaged file is refused with an error
// wrapping ErrCorrupt; an empty one too, which bbolt would silently make a
// new store.
//
// A Store is safe for concurrent use: bbolt serialises writers, and every
// method runs in one transaction. Only one process can hold the database
// open; a second Open fails with ErrLocked after about a second instead of
// waiting forever. After Close every method returns ErrClosed.
//
// This package makes no decisions about pods: it does not wake them or
// change their records on its own. Its one log output is the background
// pruning's (LinePruned, LinePruneFailed), to the logger StartPruning is
// given.
package store
