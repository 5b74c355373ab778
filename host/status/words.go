package status

import (
	"fmt"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/machines"
)

// stateWords says what each state of the pod lifecycle means, for a person:
// docs/design.md's table of states, shortened. refused takes the start's
// HTTP status.
var stateWords = map[engine.State]string{
	machines.Asleep:      "The pod is down and no wake is in progress.",
	machines.Waking:      "A wake was requested; the pod is not up yet.",
	machines.Loading:     "The pod is running; its model does not answer yet.",
	machines.Stuck:       "The model has been loading for the loading ceiling or longer: it may be stuck.",
	machines.Ready:       "The model answers.",
	machines.Crashed:     "The model answered on this boot, then stopped answering while the pod runs: it may have crashed.",
	machines.Stopped:     "The pod was ready, then stopped (it stops itself when idle).",
	machines.Refused:     "The conductor refused the last wake request (HTTP %d).",
	machines.StartFailed: "The last wake request never reached the conductor.",
	machines.NeverReady:  "The last wake was not ready within the wake watch.",
}

// words is state in words for rec.
func words(state engine.State, rec machines.Record) string {
	w, ok := stateWords[state]
	switch {
	case !ok:
		return "A state this page has no words for."
	case state == machines.Refused:
		return fmt.Sprintf(w, rec.RefusedStatus)
	}
	return w
}

// tone is the colour a state is shown in: ok (answering), busy (a wake in
// progress), idle (down, nothing wrong) or bad (someone should look).
func tone(state engine.State) string {
	switch state {
	case machines.Ready:
		return "ok"
	case machines.Waking, machines.Loading:
		return "busy"
	case machines.Asleep, machines.Stopped:
		return "idle"
	}
	return "bad"
}

// outcomeWords names a logged wake's outcome.
var outcomeWords = map[string]string{
	string(machines.Ready):       "ready",
	string(machines.Refused):     "refused",
	string(machines.StartFailed): "start failed",
	string(machines.NeverReady):  "never ready",
	machines.WakeSuperseded:      "superseded",
}

func outcome(o string) string {
	if w, ok := outcomeWords[o]; ok {
		return w
	}
	return "unknown"
}
