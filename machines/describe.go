package machines

import "time"

// View is what the conductor says about a pod right now.
type View struct {
	Status    string // RUNNING, EXITED, ...
	Running   bool   // RUNNING with a proxy URL
	Lookup    string
	FromCache bool // the conductor could not be reached; this is the last known view
}

// Describe answers "where is the brain?" without deciding anything: the reply
// for rec and view at now, for a turn that must not wake (wakeMode resume).
// It reads the same guards as Decide; it changes nothing and wakes nothing.
func (p *Pod) Describe(rec Record, view View, now time.Time) (ReplyKey, string, error) {
	var key ReplyKey
	switch {
	case view.Lookup == LookupUnreadable || view.FromCache:
		key = ReplyUnreadable
	case view.Running:
		switch p.loadingCase(rec, Event{At: now}) {
		case "loadingStuck":
			key = ReplyStuck
		case "loadingOnWake":
			key = ReplyLoadingWaking
		default:
			key = ReplyLoading
		}
		rec.ModelLoadingSince = p.loadingSince(rec, now)
	case rec.Outcome == OutcomeNone && !rec.WakeRequestedAt.IsZero() &&
		now.Sub(rec.WakeRequestedAt) <= p.policy.Timings.WakeWindow:
		key = ReplyStillWaking
	default:
		key = ReplyResumeWaiting
	}
	text, err := p.policy.Replies.Render(key, p.replyData(rec, rec, now))
	return key, text, err
}
