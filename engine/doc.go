// Package engine runs table-driven state machines: it decides, the caller acts.
//
// A machine is described by a Table: declared states, triggers, guard names
// and effect names, and rows of the form
//
//	From --On [Guard]--> To / Effects
//
// Compile checks the table, binds every guard name to a Go function and builds
// a Machine on github.com/qmuntal/stateless. Fire then answers one question:
// given this record (in the state stateOf reads from it), this trigger, this
// event and this time, which row applies? It returns a Result naming the new
// state and the effects to perform.
//
// # What engine must not do
//
// The package is pure. It imports only the standard library and stateless. It
// does no I/O, reads no clock (time is the now argument of Fire), starts no
// goroutines and keeps no record state: the state lives in the caller's record
// and is read on every Fire. Effects are names, returned, never performed.
// deps_test.go fails if anything else creeps into its dependencies.
//
// # The caller's duties
//
//  1. Serialise Fire calls per record. Fire is safe to call concurrently on
//     different records, but two Fires on the same record would both start
//     from the same stored state and one decision would be lost. Use a
//     per-record lock, a single writer, or a version check in storage.
//  2. Persist Result.To. Fire does not change the record (it receives a copy);
//     the next Fire sees the new state only if you store it. If storage is
//     shared between processes, store with compare-and-swap on a version.
//  3. Perform Result.Effects, in order, after (or atomically with) persisting
//     the state, e.g. through an outbox. An Ignored result has none.
//  4. Pass now. Read the clock once, outside the engine, and pass the same
//     value to every guard of the Fire.
//  5. Keep guards pure, cheap and exact complements of each other: a guard
//     may run more than once per Fire, and two guards that both pass for the
//     same state and trigger are an error at Fire time. Guards must not change
//     the record or the event: if R or E is a pointer or holds slices or maps,
//     treat what they point to as read-only.
//  6. Treat the Result as yours: its Effects are a fresh copy per Fire.
//
// # Table semantics
//
//   - Any in Row.From makes a row apply from every declared state (Compile
//     expands it). An Any row whose To is a concrete state re-enters that
//     state when fired from it.
//   - Stay in Row.To makes the row internal: effects are returned and the
//     state does not change (stateless InternalTransition).
//   - A row whose To equals its From is a re-entry (stateless PermitReentry):
//     the state is "changed" to itself. Without entry or exit actions it
//     differs from Stay only in the diagram.
//   - An Ignore makes a trigger a no-op in one state: Fire returns a Result
//     with Ignored set and no error. A final state lists what it ignores; a
//     state with no rows and no ignores is rejected by Compile.
//   - Several rows may share a state and trigger only if each has its own
//     guard. At most one may pass at Fire time.
//
// # Errors
//
// Compile returns a *TableError listing every problem in the table at once.
// Fire returns an *UnhandledError when the trigger has no passing row and no
// Ignore in the record's state (callers that drop stale events branch on it
// with errors.As), and a plain error for an undeclared state or trigger, two
// passing guards, or a panicking guard. Fire never panics.
package engine
