package machines

import (
	"slices"
	"time"
)

// EstimateWakes is how many of a pod's last completed wakes its estimate is
// the median of.
const EstimateWakes = 10

// WakeSuperseded is the outcome of a wake that a newer one replaced while
// its own outcome was still unknown: asked again beyond wake_window (#712).
const WakeSuperseded = "superseded"

// Wake is one wake of a pod as its wake log keeps it: the times of its
// phases, what became of it and whether it served anybody. LogWake makes
// it from the pod's records; the host stores it. It is a value with no
// derived state: a status page reads it as it is.
type Wake struct {
	Pod         string    `json:"pod"`
	RequestedAt time.Time `json:"requestedAt"` // the wake's WakeRequestedAt: which wake it is
	RunningAt   time.Time `json:"runningAt"`   // when the pod was first seen up; zero: never
	ReadyAt     time.Time `json:"readyAt"`     // when its model was ready; zero: never
	// Outcome is what became of it: ready (also once it stopped or
	// crashed), refused, start-failed, never-ready or superseded.
	Outcome string `json:"outcome"`
	// Served is true when the model answered a turn while this wake was the
	// one on record.
	Served bool `json:"served"`
	// StoppedAt and Stop are when and why the host stopped the pod after
	// this wake (Record.StoppedAt, StopReason); zero and "" when it did
	// not.
	StoppedAt time.Time `json:"stoppedAt,omitzero"`
	Stop      string    `json:"stop,omitempty"`
}

// Booting is how long the wake took from its request to the pod first seen
// up; false when it was never seen up.
func (w Wake) Booting() (time.Duration, bool) { return span(w.RequestedAt, w.RunningAt) }

// Loading is how long the model took to be ready once the pod was up; false
// unless the wake reached both.
func (w Wake) Loading() (time.Duration, bool) {
	if w.RunningAt.IsZero() {
		return 0, false
	}
	return span(w.RunningAt, w.ReadyAt)
}

// Took is how long the wake took from its request to a ready model; false
// when it never was ready.
func (w Wake) Took() (time.Duration, bool) { return span(w.RequestedAt, w.ReadyAt) }

// span is to - from, never negative; false when to is zero.
func span(from, to time.Time) (time.Duration, bool) {
	if to.IsZero() {
		return 0, false
	}
	return max(0, to.Sub(from)), true
}

// Estimate is how long a pod's wake takes, from request to a ready model.
type Estimate struct {
	Wake time.Duration
	// Wakes is how many measured wakes Wake is the median of; 0: none, and
	// Wake is the expected_wake setting.
	Wakes int
}

// EstimateWake is the estimate for a pod whose wake log is wakes: the
// median time from request to ready of its last EstimateWakes completed
// wakes (by request time), or expected when none has completed. A wake
// completed when its model was ready after its request; one ready no later
// than its request (a boot already under way or done, within ready_slack)
// measured no boot of its own and does not count. For an even count the
// median is the mean of the middle two.
func EstimateWake(wakes []Wake, expected time.Duration) Estimate {
	var done []Wake
	for _, w := range wakes {
		if w.Outcome == string(Ready) && w.ReadyAt.After(w.RequestedAt) {
			done = append(done, w)
		}
	}
	if len(done) == 0 {
		return Estimate{Wake: expected}
	}
	slices.SortStableFunc(done, func(a, b Wake) int { return a.RequestedAt.Compare(b.RequestedAt) })
	done = done[max(0, len(done)-EstimateWakes):]
	took := make([]time.Duration, len(done))
	for i, w := range done {
		took[i], _ = w.Took()
	}
	slices.Sort(took)
	n := len(took)
	median := took[n/2]
	if n%2 == 0 {
		median = took[n/2-1] + (took[n/2]-took[n/2-1])/2
	}
	return Estimate{Wake: median, Wakes: n}
}

// LogWake says what a pod's wake log records for the change of its record
// from before to after, given what the log holds (logged, any order): the
// entry to store, which replaces the logged one of the same wake, or false
// when the change logs nothing. An entry is made when a wake's outcome
// becomes known — the record leaves waking, loading and stuck; a wake
// replaced by a newer one before that is superseded — and is stored again
// when the wake, already logged, serves its first turn, and when the host
// stops its pod (recordStopped). A wake still in progress is in the
// record, not in the log.
func LogWake(logged []Wake, before, after Record) (Wake, bool) {
	wake := before.WakeRequestedAt
	if wake.IsZero() {
		return Wake{}, false
	}
	if !after.WakeRequestedAt.Equal(wake) {
		if !InProgress(before.State) {
			return Wake{}, false // logged when its outcome became known
		}
		w := wakeOf(before)
		w.Outcome = WakeSuperseded
		return w, true
	}
	if InProgress(before.State) && !InProgress(after.State) {
		w := wakeOf(after)
		if w.Outcome == "" {
			// Only loading or stuck seen down with the wake off the clock
			// (wakeOffClock) gets here: not ready wake_watch after its
			// request.
			w.Outcome = string(NeverReady)
		}
		return w, true
	}
	i := slices.IndexFunc(logged, func(w Wake) bool { return w.RequestedAt.Equal(wake) })
	if !after.StoppedAt.IsZero() && before.StoppedAt.IsZero() {
		w := wakeOf(after)
		if i >= 0 {
			w = logged[i]
			w.Served = w.Served || after.Served
		}
		w.StoppedAt, w.Stop = after.StoppedAt, after.StopReason
		return w, true
	}
	if i >= 0 && after.Served && !logged[i].Served {
		w := logged[i]
		w.Served = true
		return w, true
	}
	return Wake{}, false
}

// wakeOf is the log entry of r's wake as r knows it.
func wakeOf(r Record) Wake {
	w := Wake{Pod: r.Pod, RequestedAt: r.WakeRequestedAt, RunningAt: r.RunningAt, Outcome: r.Outcome(), Served: r.Served}
	if w.Outcome == string(Ready) {
		// The outcome is ready in ready, stopped and crashed; after the
		// wake the only way into them is a row into ready, which records
		// ReadyAt: it is this wake's.
		w.ReadyAt = r.ReadyAt
	}
	return w
}

// estimate is est, or expected_wake when est measured nothing.
func (p *Pod) estimate(est Estimate) Estimate {
	if est.Wakes == 0 {
		return Estimate{Wake: p.policy.Timings.ExpectedWake}
	}
	return est
}

// Eta is when the wake on record r is expected ready by est (requested +
// estimate) and how long that is after now, never negative: zero once the
// estimate has run out. ok is false when no wake is in progress (waking,
// loading or stuck, requested within wake_watch).
func (p *Pod) Eta(r Record, est Estimate, now time.Time) (at time.Time, remaining time.Duration, ok bool) {
	if !p.facts.of(r.State).InProgress || !p.wakeOnClock(r, now) {
		return time.Time{}, 0, false
	}
	at = r.WakeRequestedAt.Add(p.estimate(est).Wake)
	return at, max(0, at.Sub(now)), true
}

// late reports whether the wake on record has run past a measured
// estimate at now (edge inclusive). With none measured nothing is late:
// expected_wake is a setting, not what this pod usually takes, and the
// replies keep the design's wording.
func (p *Pod) late(r Record, est Estimate, now time.Time) bool {
	return est.Wakes > 0 && !r.WakeRequestedAt.IsZero() && now.Sub(r.WakeRequestedAt) >= est.Wake
}

// etaMinutes is the estimate as the replies quote it: a measured one
// rounded to the nearest minute and at least 1; expected_wake in whole
// minutes, as ExpectedMinutes.
func (p *Pod) etaMinutes(est Estimate) int {
	if est.Wakes == 0 {
		return wholeMinutes(p.policy.Timings.ExpectedWake)
	}
	return roundMinutes(est.Wake)
}

// roundMinutes is d rounded to the nearest minute, at least 1 for any
// positive d, 0 for none.
func roundMinutes(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return max(1, int((d+30*time.Second)/time.Minute))
}
