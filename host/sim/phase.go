package sim

import "time"

// phase is where a wake stands at one instant.
type phase int

const (
	phaseAsleep   phase = iota // stopped, idled out, or never started
	phaseCreating              // start accepted; the replacement pod does not exist yet
	phaseCreated               // the pod exists but is not running
	phaseLoading               // RUNNING with a proxy URL; the model does not answer yet
	phaseReady                 // the model answers completions
)

// wake is one start of a pod, from the start request until the pod stops.
// It holds only an identity and timestamps; at derives everything else.
type wake struct {
	podID        string
	startedAt    time.Time
	readyAt      time.Time // the model starts answering; zero = never (NeverReady)
	stoppedAt    time.Time // explicit stop; zero = none
	lastActivity time.Time // last answered completion; zero = none
	answered     int       // completions answered on this wake
	// firstAnswer is when the model first answered anything on this wake
	// (a completion, a model list, a health check); firstAnswerWall is the
	// same moment on the wall clock. Zero until then.
	firstAnswer, firstAnswerWall time.Time
}

// podState is what a wake looks like at one instant.
type podState struct {
	phase      phase
	created    bool      // the pod came to exist (before the wake ended, if it has)
	running    bool      // the pod reached RUNNING (before the wake ended, if it has)
	readySince time.Time // the model started answering; zero if it has not
}

// newWake starts a wake at now. A pod marked never-ready gets no readyAt.
func newWake(podID string, now time.Time, tm timing, neverReady bool) *wake {
	w := &wake{podID: podID, startedAt: now}
	if !neverReady {
		w.readyAt = now.Add(tm.ready)
	}
	return w
}

// end is when the wake stops if nothing else happens: the explicit stop, or
// IdleStop after the later of readiness and the last answered completion,
// whichever is first. Zero means never (not stopped, and never ready or
// never idling out). Loading time is not idle time.
func (w *wake) end(tm timing) time.Time {
	end := w.stoppedAt
	if w.readyAt.IsZero() || tm.idle == 0 {
		return end
	}
	idleFrom := w.readyAt
	if w.lastActivity.After(idleFrom) {
		idleFrom = w.lastActivity
	}
	if idle := idleFrom.Add(tm.idle); end.IsZero() || idle.Before(end) {
		end = idle
	}
	return end
}

// at is the wake's state at t. It is a pure function of the wake, the timing
// and t.
func (w *wake) at(t time.Time, tm timing) podState {
	end := w.end(tm)
	ended := !end.IsZero() && !t.Before(end)
	// reached reports whether the moment x had come by t — or, for a wake that
	// has ended, strictly before its end.
	reached := func(x time.Time) bool { return !t.Before(x) }
	if ended {
		reached = func(x time.Time) bool { return x.Before(end) }
	}
	st := podState{
		created: reached(w.startedAt.Add(tm.create)),
		running: reached(w.startedAt.Add(tm.boot)),
	}
	if !w.readyAt.IsZero() && reached(w.readyAt) {
		st.readySince = w.readyAt
	}
	switch {
	case ended:
		st.phase = phaseAsleep
	case !st.created:
		st.phase = phaseCreating
	case !st.running:
		st.phase = phaseCreated
	case st.readySince.IsZero():
		st.phase = phaseLoading
	default:
		st.phase = phaseReady
	}
	return st
}
