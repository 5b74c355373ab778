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
// pod's estimate est as Decide takes it in Event.Estimate. It reads the
// state and the same clocks as Decide; it changes nothing.
func (p *Pod) Describe(rec Record, view View, now time.Time, est Estimate) (ReplyKey, string, error) {
	key := ReplyResumeWaiting
	switch {
	case !view.Fresh():
		key = ReplyUnreadable
	case rec.State == Stuck, rec.State == Loading && p.loadingStuck(rec, now):
		key = ReplyStuck
	case (rec.State == Loading || rec.State == Ready) && p.wakeOnClock(rec, now):
		// Ready here means the conductor calls it ready and the model did
		// not answer this turn: it is not serving yet, or any more.
		key = ReplyLoadingWaking
	case rec.State == Loading, rec.State == Ready:
		key = ReplyLoading
	case rec.State == Crashed:
		key = ReplyCrashed
	case rec.State == Waking && p.inWindow(rec, now) && p.late(rec, est, now):
		key = ReplyStillWakingLate
	case rec.State == Waking && p.inWindow(rec, now):
		key = ReplyStillWaking
	}
	if rec.State == Loading || rec.State == Stuck {
		rec.ModelLoadingSince = p.loadingSince(rec, now)
	}
	text, err := p.policy.Replies.Render(key, p.replyData(rec, rec, est, now))
	return key, text, err
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
