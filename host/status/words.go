package status

import (
	"fmt"
	"strings"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/machines"
)

// words is state in words for rec: the state's means in the spec; refused
// adds the start's HTTP status.
func words(state engine.State, rec machines.Record) string {
	w := machines.Facts(state).Means
	switch {
	case w == "":
		return "A state this page has no words for."
	case state == machines.Refused && rec.RefusedStatus != 0:
		return fmt.Sprintf("%s (HTTP %d).", strings.TrimSuffix(w, "."), rec.RefusedStatus)
	}
	return w
}

// tone is the colour a state is shown in, its tone in the spec: ok
// (answering), busy (a wake in progress), idle (down, nothing wrong) or bad
// (someone should look).
func tone(state engine.State) string {
	if t := machines.Facts(state).Tone; t != "" {
		return t
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
