package machines

import (
	"time"

	"github.com/wakeonchat/wakeonchat/specs"
)

// Preview is what a chat turn asking now would get from the machine, as a
// status page shows it: decided on a copy, so nothing changes.
type Preview struct {
	// Answered is true when the state is ready: the turn goes to the model,
	// which answers it, and the machine gives no reply.
	Answered bool
	Reply    ReplyKey // the reply the turn would get; "" when Answered
	Text     string   // that reply, rendered
	// Wakes is true when the turn would wake the pod.
	Wakes bool
}

// Preview is what a turn asking about rec at now would get, with the pod's
// estimate est (as Decide takes it in Event.Estimate), without deciding
// anything: it runs Decide on the event such a turn brings and keeps the
// decision, never the record. The conductor's answer at that moment is not
// known, so the event is the one the state says the turn would meet: in
// ready the model answers; in an up state (loading, stuck, crashed) the pod
// is RUNNING and its model does not answer (modelLoading); in a down state
// (asleep, waking, stopped, refused, start-failed) the pod is not running
// (notReady). In never-ready, which holds up or down, v says which: its
// status RUNNING (or IsRunning) is up.
func (p *Pod) Preview(rec Record, v View, est Estimate, now time.Time) (Preview, error) {
	state, _ := Reports(rec, v)
	if state == Ready {
		return Preview{Answered: true}, nil
	}
	rec.State = state
	ev := Event{Trigger: NotReady, At: now, Status: v.Status, Lookup: LookupFound, Estimate: est}
	switch p.facts.of(state).Group {
	case specs.Up:
		ev.Trigger = ModelLoading
	case specs.Either:
		if v.IsRunning || v.Status == "RUNNING" {
			ev.Trigger = ModelLoading
		}
	}
	d, _, err := p.Decide(rec, ev)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Reply: d.Reply, Text: d.Text, Wakes: d.Action == ActionWake}, nil
}
