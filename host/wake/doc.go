// Package wake feeds wake-on-chat's pod lifecycle machine and performs its
// decisions: every event a pod has — a turn that found it not ready
// (NotReady), a turn its model answered (Answered), every read of the pod by
// the conductor (Observe), the outcome of a start and of a watch — runs
// machines.Pod.Decide for that pod, and the Coordinator persists the record
// it returns, logs the decision and carries out its effects (D4, D12).
//
// This is the only place in the host that calls Decide. For each pod the
// Coordinator serialises read record → Decide → persist under one per-pod
// lock, so however many turns find an asleep pod at once, exactly one of them
// gets the wake decision and one start request goes out per wake window. The
// lock is the process's and the store's (Records.UpdateRecord): on a store
// several hosts share, it holds across them, and so does the rule. The
// state it stores is what GET /api/pods/{name} reports.
//
// The lifecycle of one wake:
//
//  1. NotReady decides. On wake it returns the decision at once and sends
//     the start through the GPU plugin in the background, on a context of its
//     own: the caller's cancellation never cancels it and the turn never
//     waits for it.
//  2. The start's result is logged as the operator line of
//     describeStart (#684). A refused or never-sent start is
//     fed back to the machine (StartRefused, StartNotSent), before its line
//     is logged, and is not watched. A requested start — accepted, in flight
//     after the client's timeout, or whose answer was lost with the plugin —
//     is watched.
//  3. The watch reads the pod every WatchPoll and feeds what the conductor
//     says to the machine; while the last read found the pod RUNNING with a
//     proxy URL it also probes the model through the Prober every
//     ProbeInterval, and feeds the first answer as an answered turn. It goes
//     on until the machine leaves the wake's states (waking, loading,
//     stuck), or until wake_watch after the request, when it feeds
//     NeverReadySeen. A watch whose wake has been superseded by a newer one
//     stops; a read it had in flight is still what the conductor said, and
//     is fed like any other. Whichever read, probe or turn first finds the
//     wake ready, "wake ready for pod" is logged once. A pod with no wake on
//     the clock has no watch: nothing reads or probes it in the background.
//  4. When the wake's outcome becomes known (ready, refused, start-failed,
//     never-ready, or superseded by a newer wake), and again when it serves
//     its first turn, its entry of the pod's wake log (machines.LogWake:
//     request, first seen RUNNING, ready, outcome, served) is stored with
//     the record, in one transaction (Records.UpdateRecord). The median of
//     the last completed wakes in the log (Config.Wakes) is the estimate
//     every later event carries (Estimate), so the replies say how long
//     this pod's wakes take.
//  5. After a restart, Resume watches again every stored wake whose outcome
//     is unknown, on the wake's own clock.
//  6. With Config.Leases, a watch runs only while it holds the wake's lease,
//     so of the hosts sharing the store one watches each wake; with
//     Config.Takeover, a host looks for wakes in progress that nobody
//     watches (their host died) and takes their watch over (takeover.go).
//  7. With Config.Stops, the host stops a pod that idled (idle.go): once
//     across the hosts sharing the store (the stop's lease), never with a
//     turn in flight (Begin), and feeds the stop to the machine
//     (HostStopped). Its idle time runs from the last answer any of them
//     gave: each stamps the pod's record with its answers, at most once
//     per AnswerStamp, in the background (stamp.go).
//
// What this package must not do: block a turn on the network (no start, pod
// read or watch runs in NotReady's path, and no pod lock is held across a
// network call); let a panicking or hanging plugin call take the host down or
// wedge a pod; write an outcome for any wake but the one on record; log
// anything but pod names, statuses and times (it never sees tokens, and sees
// a pod's proxy URL only to hand it to the Prober: plugin errors are logged
// as their short class, probe failures as the Prober's URL-free words).
//
// The caller's duties: report every turn in flight to Begin (the turn
// service's Activity); give every not-ready turn to NotReady with the
// conductor's status and lookup, and reply with the returned decision's
// Text; make the Coordinator every resolver's observer, so that reads and
// answered turns reach it; give it a Prober for the pods' models (without
// one, a wake's readiness waits for a read's readySince or a turn); call
// Resume once at start-up, after the store is
// open; on a store other hosts share, call Elsewhere with each change they
// make (store.Changes); call Close before closing the store.
package wake
