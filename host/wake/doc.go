// Package wake performs wake-on-chat's pod lifecycle decisions: when a chat
// turn finds its pod not ready, a Coordinator runs machines.Pod.Decide for
// that pod, persists the record it returns, logs the decision, and carries out
// its effects — the start request, the start's outcome, and the watch that
// names what became of the wake (D4, D12).
//
// This is the only place in the host that calls Decide. For each pod the
// Coordinator serialises read record → Decide → persist under one per-pod
// lock, so however many turns find an asleep pod at once, exactly one of them
// gets the wake decision and one start request goes out per wake window.
//
// The lifecycle of one wake:
//
//  1. NotReady decides. On wake it returns the decision at once and starts
//     the start request in the background, on a context of its own: the
//     caller's cancellation never cancels it and the turn never waits for it.
//  2. The start's result is logged as the operator line of
//     machines.DescribeWakeResult (#684). A refused or failed start is fed
//     back to the machine (StartRefused, StartFailed), before its line is
//     logged, and is not watched. A requested start — accepted, or in
//     flight after the client's timeout — is watched.
//  3. The watch polls the pod every WatchPoll until its readySince (no earlier
//     than the wake minus ReadySlack) is seen — the wake is recorded ready —
//     or until WakeWatch after the request, when it is recorded never-ready.
//     A watch whose wake has been superseded by a newer one stops and writes
//     nothing.
//  4. After a restart, Resume watches again every stored wake whose outcome
//     is unknown, on the wake's own clock.
//
// What this package must not do: block a turn on the network (no start, pod
// read or watch runs in NotReady's path, and no pod lock is held across a
// network call); let a panicking or hanging plugin call take the host down or
// wedge a pod; write an outcome for any wake but the one on record; log
// anything but pod names, statuses and times (it never sees URLs or tokens,
// and keeps it that way: plugin errors are logged as their short class).
//
// The caller's duties: give every not-ready turn to NotReady with the
// conductor's status and lookup and the error's capabilities, and reply with
// the returned decision's Text; call Resume once at start-up, after the store
// is open; call Close before closing the store.
package wake
