// Package events pushes each pod's record changes to whoever waits on the
// pod: the pod event stream (GET /api/pods/{name}/events, host/chat), the
// OpenAI door's held requests (host/openai), and any other reader that would
// otherwise ask the conductor again and again.
//
// A Hub is fed by wake.Config.Changed, which the coordinator calls under the
// pod's lock with every record change it stores, in order, and, on a store
// several hosts share, by Elsewhere with the records the other hosts store
// (host/app, through wake.Coordinator.Elsewhere, under the same lock). Each subscriber
// gets the pod's current Update when it subscribes, then every later one.
// The current Update comes from what the hub was told, never from a lookup
// of its own: any number of subscribers share the one watch of a wake and
// cost no conductor request.
//
// Publish never blocks. Every subscriber has a bounded buffer; one whose
// buffer is full when a change comes is closed (Err is ErrLagged), after the
// updates it holds, and the others and the coordinator carry on. A subscriber
// that lagged subscribes again to get the current Update.
//
// What this package must not do: any I/O, any call back into the wake
// coordinator (Publish runs under the pod's lock), or compute a pod's state
// itself: Update.Report is machines.Reports.
package events
