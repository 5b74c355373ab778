package turn

import (
	"context"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/machines"
)

// This file holds every fact about a pod lifecycle state the service reads
// from the machine: which states a hold waits through (the spec's
// holdable), which report a model freshly ready, and the reply of a turn
// that must not wake (the spec's asked rows).

// holdable reports whether a pod in state s becomes ready by waiting.
func holdable(s engine.State) bool { return machines.Holdable(s) }

// reports is the state rec and v report, and whether the model is freshly
// ready (the readiness a resume or a held prompt requires).
func reports(rec machines.Record, v machines.View) (engine.State, bool) {
	return machines.Reports(rec, v)
}

// describe is the state's reply for a turn that must not wake, as a
// decision that changes nothing: its reply key and text.
func (s *Service) describe(rec machines.Record, v machines.View, now time.Time, est machines.Estimate) machines.Decision {
	key, text, err := s.cfg.Policy.Describe(rec, v, now, est)
	if err != nil {
		// Replies were rendered against sample data at load; this is a bug.
		s.cfg.Logger.Error("rendering a reply", "err", err)
		return machines.Decision{Reply: machines.ReplyKey(metrics.ResultInternalError), Text: machines.FallbackReply, From: rec.State, To: rec.State}
	}
	state, _ := reports(rec, v)
	return machines.Decision{Reply: key, Text: text, From: state, To: state}
}

// State is pod's recorded state as the machine reports it (a pod with no
// record yet is asleep); false when its record cannot be read.
func (s *Service) State(ctx context.Context, pod string) (engine.State, bool) {
	rec, err := s.cfg.Wake.Record(ctx, pod)
	if err != nil {
		return "", false
	}
	state, _ := reports(rec, machines.View{})
	return state, true
}
