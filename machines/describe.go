package machines

import (
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
)

// View is what the conductor says about a pod right now.
type View struct {
	Status     string // RUNNING, EXITED, ...
	IsRunning  bool   // the conductor says the pod runs
	Lookup     string
	ReadySince time.Time // zero when the conductor gave none
	FromCache  bool      // the conductor could not be reached; this is the last known view
}

// Fresh reports whether v is the conductor's answer now, about a pod it
// could read: only a fresh view is evidence of the pod's state (D8).
func (v View) Fresh() bool { return !v.FromCache && v.Lookup != LookupUnreadable }

// Observe turns a fresh view of the pod into the event that tells the
// machine what the conductor says: podDown, podUp or readySince. A view
// that is not fresh says nothing (false).
func Observe(v View, now time.Time) (Event, bool) {
	if !v.Fresh() {
		return Event{}, false
	}
	ev := Event{At: now, Status: v.Status, Lookup: v.Lookup, ReadySince: v.ReadySince}
	switch {
	case !v.IsRunning || v.Lookup == LookupNotFound:
		ev.Trigger = PodDown
	case v.ReadySince.IsZero():
		ev.Trigger = PodUp
	default:
		ev.Trigger = ReadySinceSeen
	}
	return ev, true
}

// Describe answers "where is the brain?" without deciding anything: the reply
// for rec at now, for a turn that must not wake (wakeMode resume), with the
// pod's estimate est as Decide takes it in Event.Estimate. It is the table's
// answer to the asked event (unreadable for a view that is not fresh),
// decided on a copy: nothing changes.
func (p *Pod) Describe(rec Record, view View, now time.Time, est Estimate) (ReplyKey, string, error) {
	ev := Event{Trigger: Asked, At: now, Status: view.Status, Lookup: view.Lookup, Estimate: est}
	if !view.Fresh() {
		ev.Trigger = Unreadable
	}
	d, _, err := p.Decide(rec, ev)
	return d.Reply, d.Text, err
}

// Reports is what GET /api/pods/{name} says of a pod whose record is rec
// after the view v was fed to the machine: the state, and whether the model
// is freshly ready. A view that is not fresh is never ready (D8).
func Reports(rec Record, v View) (engine.State, bool) {
	state := rec.State
	if state == "" {
		state = Asleep
	}
	return state, state == Ready && v.Fresh()
}
