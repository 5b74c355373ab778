// Package machines holds wake-on-chat's pod lifecycle machine and wake
// policy: given what is known about one pod (a Record, whose State says what
// became of the pod and its current wake) and what just happened (an Event:
// a turn, a read of the conductor, an outcome of the wake), Decide says
// whether to wake the pod or wait, which reply the user gets, and what the
// record becomes.
//
// The behaviour is the transition table in specs/pod-lifecycle.toml,
// compiled by engine/; this package binds its guards and applies its effects.
// It is pure, like etcd's raft: no I/O, no clock, no goroutines. Time is the
// event's At; the caller's record is never changed.
//
// The caller's duties:
//   - serialise Decide per pod (a per-pod lock) and persist the returned record;
//   - feed it every observation: each turn (notReady, modelLoading,
//     answered, unreadable) and each read of the conductor (Observe turns a
//     View into podDown, podUp or readySince);
//   - perform the decision: when it says wake, send the start request (in the
//     background, never in the response path), and feed the start's outcome
//     back as a refused or startFailed event stamped with the wake's
//     WakeRequestedAt;
//   - watch each wake that was not refused, feeding its reads, and feed
//     neverReady back the same way when wake_watch passes;
//   - log decision.Stuck and decision.Crashed at error level;
//   - keep each pod's wake log: store the entry LogWake gives for each
//     change of the record, and give every event the pod's estimate
//     (EstimateWake of that log) in Event.Estimate, so that the replies
//     quote how long this pod's wakes really take.
package machines

//go:generate go run ./gendoc -out ../docs/state-diagram.md
