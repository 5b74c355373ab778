package wake

import (
	"fmt"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
)

// The answer's stamp. The idle stop measures from a pod's last answer; on
// a store several hosts share, the answers one host sees, and the turns it
// begins (Begin: a turn in flight there holds the pod as one here does),
// reach the others as the stamp it stores in the pod's record (machines.Record.AnsweredAt;
// a turn still in flight is stamped again each AnswerStamp, keepDueLocked),
// which their idle loops take with their own last answer, and which their
// last look before a stop reads as stored. Stamping every answer would
// cost a record write per answer; a host stamps only when the stamp it
// knows is AnswerStamp old or older, and writes it in the background, off
// the answer's path. On the record under the pod's lock it stamps only when
// the stored stamp still is that old: a pod that several hosts answer
// costs about one write a minute in all.

// AnswerStamp is the granularity of the answer's stamp: an answer of a pod
// with an idle stop stamps its record when the stored stamp is at least
// this old. A stamp is thus up to AnswerStamp older than the last answer,
// and a host that saw none of a pod's answers itself may stop it up to
// AnswerStamp sooner after the last of them than stop_after_idle.
const AnswerStamp = time.Minute

// stampDueLocked reports whether an answer of pod at now stamps its
// record, and if so marks the stamp in flight: pod has an idle stop, no
// stamp of it is being written, and the stamp this host knows is
// AnswerStamp old or older. The caller holds idle.mu.
func (c *Coordinator) stampDueLocked(pod string, a *activity, now time.Time) bool {
	if c.stops[pod].AfterIdle <= 0 || a.stamping || now.Sub(a.rec.AnsweredAt) < AnswerStamp {
		return false
	}
	a.stamping = true
	return true
}

// stampAnswer stores at, an answer of pod, as its record's AnsweredAt in
// the background, and ends the stamp in flight.
func (c *Coordinator) stampAnswer(pod string, at time.Time) {
	if !c.enter() {
		c.stamped(pod)
		return
	}
	go func() {
		defer c.wg.Done()
		defer c.stamped(pod)
		c.writeStamp(pod, at)
	}()
}

// writeStamp stamps pod's record with at under the pod's lock, unless the
// stored stamp is younger than AnswerStamp (another host stamped it
// meanwhile). It is stored as every change is (commitLocked): a stamp is a
// change like any other (Changed, with the answered event at its time),
// and the record as stored then is what this host holds of the pod. It
// runs on the abandoned context, like a stop: a host shutting down still
// stores the answers it saw, which the other hosts' idle stops need. A
// failed write is a store failure like a failed event (logged once per
// outage); the next answer stamps again.
func (c *Coordinator) writeStamp(pod string, at time.Time) {
	ctx := c.abandoned
	unlock := c.lockPod(pod)
	defer unlock()
	_, _, err := c.commitLocked(ctx, pod, func(rec machines.Record) (edit, error) {
		if at.Sub(rec.AnsweredAt) >= AnswerStamp {
			rec.AnsweredAt = at
		}
		return edit{next: rec, ev: machines.Event{Trigger: machines.Answered, At: at}}, nil
	})
	if err != nil {
		c.storeFailed(ctx, pod, fmt.Sprintf("wake: record of pod %s: the answer's stamp not stored: %v", pod, err))
	}
}

// stamped ends pod's stamp in flight.
func (c *Coordinator) stamped(pod string) {
	c.idle.mu.Lock()
	defer c.idle.mu.Unlock()
	c.idle.podLocked(pod).stamping = false
}
