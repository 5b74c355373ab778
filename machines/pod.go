package machines

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/specs"
)

// The states of the pod lifecycle (specs/pod-lifecycle.toml).
const (
	Asleep     engine.State = "asleep"
	Waking     engine.State = "waking"
	Loading    engine.State = "loading"
	Stuck      engine.State = "stuck"
	Ready      engine.State = "ready"
	Refused    engine.State = "refused"
	NeverReady engine.State = "never-ready"
)

// The events (triggers) the pod lifecycle takes.
const (
	// NotReady: the conductor says the pod is not running, or could not read it.
	NotReady engine.Trigger = "notReady"
	// ModelLoading: the pod is RUNNING but the model does not answer yet (D7).
	ModelLoading engine.Trigger = "modelLoading"
	// ReadySinceSeen: the wake's watch saw the conductor's readySince (D12).
	ReadySinceSeen engine.Trigger = "readySince"
	// NeverReadySeen: the wake's watch gave up after wake_watch (D12).
	NeverReadySeen engine.Trigger = "neverReady"
	// StartRefused: the conductor answered the start with a refusal status.
	StartRefused engine.Trigger = "refused"
	// StartFailed: the start request never reached the conductor.
	StartFailed engine.Trigger = "startFailed"
)

// Outcome is what became of the current wake (D12).
type Outcome string

// The outcomes of a wake; OutcomeNone means nothing is known yet.
const (
	OutcomeNone        Outcome = ""
	OutcomeReady       Outcome = "ready"
	OutcomeNeverReady  Outcome = "never-ready"
	OutcomeRefused     Outcome = "refused"
	OutcomeStartFailed Outcome = "start-failed"
)

// Lookup values a conductor reports.
const (
	LookupFound      = "FOUND"
	LookupNotFound   = "NOT_FOUND"
	LookupUnreadable = "UNREADABLE"
)

// Record is everything the policy remembers about one pod. It is a value:
// Decide returns a new one and never changes the one it is given.
type Record struct {
	Pod               string       `json:"pod"`
	State             engine.State `json:"state"`
	WakeRequestedAt   time.Time    `json:"wakeRequestedAt"`   // zero: no wake on record
	ModelLoadingSince time.Time    `json:"modelLoadingSince"` // zero: the loading clock is not running
	Outcome           Outcome      `json:"outcome"`
	ReadyAt           time.Time    `json:"readyAt"`       // with OutcomeReady: the conductor's readySince
	RefusedStatus     int          `json:"refusedStatus"` // with OutcomeRefused: the start's HTTP status
}

// NewRecord returns the record of a pod nothing is known about.
func NewRecord(pod string) Record { return Record{Pod: pod, State: Asleep} }

// Event is something that happened to a pod.
type Event struct {
	Trigger engine.Trigger
	At      time.Time // now, as the caller's clock says
	// NotReady: the conductor's status ("EXITED", "RUNNING", ...) and lookup.
	Status string
	Lookup string
	// ReadySinceSeen: the conductor's readySince.
	ReadySince time.Time
	// StartRefused: the start's HTTP status.
	HTTPStatus int
	// Outcome events: the WakeRequestedAt of the wake they belong to. An
	// outcome for any other wake is inert.
	Wake time.Time
}

// Action is what the host must do.
type Action string

// The actions of a decision. Outcome events decide neither.
const (
	ActionNone Action = ""
	ActionWake Action = "wake"
	ActionWait Action = "wait"
)

// Decision is the policy's answer to one event.
type Decision struct {
	Action Action
	Reply  ReplyKey // "" for outcome events
	Text   string   // the reply, rendered
	Stuck  bool     // D9: the host logs it at error level
	From   engine.State
	To     engine.State
	Row    engine.Row // the transition table row taken
}

// Policy is what Decide decides by: the timings and the reply wording.
type Policy struct {
	Timings Timings
	Replies *Replies
}

// DefaultPolicy is the design's timings and wording.
func DefaultPolicy() Policy {
	return Policy{Timings: DefaultTimings(), Replies: MustDefaultReplies()}
}

// Pod is the compiled pod lifecycle machine. It is safe for concurrent use by
// many pods; Decide calls for one pod must be serialised by the caller.
type Pod struct {
	policy  Policy
	machine *engine.Machine[Record, Event]
}

// NewPod compiles the embedded pod lifecycle table with policy.
func NewPod(policy Policy) (*Pod, error) {
	t, err := specs.PodLifecycle()
	if err != nil {
		return nil, err
	}
	return newPod(t, policy)
}

func newPod(t engine.Table, policy Policy) (*Pod, error) {
	if policy.Replies == nil {
		return nil, errors.New("machines: policy has no replies")
	}
	p := &Pod{policy: policy}
	m, err := engine.Compile(t, func(r Record) engine.State { return r.State }, p.guards())
	if err != nil {
		return nil, err
	}
	p.machine = m
	return p, nil
}

// Table returns the transition table the machine runs.
func (p *Pod) Table() engine.Table { return p.machine.Table() }

// notReadyCase classifies a notReady event. The cases are tried in order, so
// exactly one holds; the guards of the table are this function's answers.
func (p *Pod) notReadyCase(r Record, ev Event) string {
	switch {
	case ev.Lookup == LookupUnreadable:
		return "unreadable"
	case r.Outcome == OutcomeReady && ev.Status != "RUNNING":
		return "stoppedAfterReady"
	case r.Outcome == OutcomeNeverReady:
		return "wakeNeverReady"
	case r.Outcome == OutcomeRefused:
		return "wakeRefused"
	case r.Outcome == OutcomeStartFailed:
		return "wakeNotSent"
	case r.WakeRequestedAt.IsZero():
		return "noWake"
	case ev.At.Sub(r.WakeRequestedAt) <= p.policy.Timings.WakeWindow:
		return "inWindow"
	default:
		return "beyondWindow"
	}
}

// wakeOnClock reports whether r's wake was requested no longer than
// wake_watch before now.
func (p *Pod) wakeOnClock(r Record, now time.Time) bool {
	return !r.WakeRequestedAt.IsZero() && now.Sub(r.WakeRequestedAt) <= p.policy.Timings.WakeWatch
}

// loadingSince is the loading clock after a modelLoading event at now: the
// running clock, else the wake's request when a wake is on the clock, else now.
func (p *Pod) loadingSince(r Record, now time.Time) time.Time {
	switch {
	case !r.ModelLoadingSince.IsZero():
		return r.ModelLoadingSince
	case p.wakeOnClock(r, now):
		return r.WakeRequestedAt
	default:
		return now
	}
}

func (p *Pod) loadingCase(r Record, ev Event) string {
	switch {
	case ev.At.Sub(p.loadingSince(r, ev.At)) >= p.policy.Timings.LoadingCeiling:
		return "loadingStuck"
	case p.wakeOnClock(r, ev.At):
		return "loadingOnWake"
	default:
		return "loadingNoWake"
	}
}

func currentWake(r Record, ev Event) bool {
	return !r.WakeRequestedAt.IsZero() && ev.Wake.Equal(r.WakeRequestedAt)
}

func (p *Pod) readyForWake(r Record, ev Event) bool {
	return currentWake(r, ev) && !ev.ReadySince.IsZero() &&
		!ev.ReadySince.Before(r.WakeRequestedAt.Add(-p.policy.Timings.ReadySlack))
}

func (p *Pod) guards() map[string]engine.Guard[Record, Event] {
	g := map[string]engine.Guard[Record, Event]{
		"currentWake":     func(r Record, ev Event, _ time.Time) bool { return currentWake(r, ev) },
		"otherWake":       func(r Record, ev Event, _ time.Time) bool { return !currentWake(r, ev) },
		"readyForWake":    func(r Record, ev Event, _ time.Time) bool { return p.readyForWake(r, ev) },
		"notReadyForWake": func(r Record, ev Event, _ time.Time) bool { return !p.readyForWake(r, ev) },
	}
	for _, c := range []string{"unreadable", "stoppedAfterReady", "wakeNeverReady", "wakeRefused",
		"wakeNotSent", "noWake", "inWindow", "beyondWindow"} {
		g[c] = func(r Record, ev Event, _ time.Time) bool { return p.notReadyCase(r, ev) == c }
	}
	for _, c := range []string{"loadingStuck", "loadingOnWake", "loadingNoWake"} {
		g[c] = func(r Record, ev Event, _ time.Time) bool { return p.loadingCase(r, ev) == c }
	}
	return g
}

// Decide runs ev through the pod lifecycle for rec and returns the decision
// and the new record. rec is not changed. An event the table does not handle
// is an *engine.UnhandledError.
func (p *Pod) Decide(rec Record, ev Event) (Decision, Record, error) {
	if rec.State == "" {
		rec.State = Asleep
	}
	res, err := p.machine.Fire(rec, ev.Trigger, ev, ev.At)
	if err != nil {
		return Decision{}, rec, err
	}
	next := rec
	next.State = res.To
	d := Decision{Action: ActionNone, From: res.From, To: res.To, Row: res.Row}
	if ev.Trigger == NotReady || ev.Trigger == ModelLoading {
		d.Action = ActionWait
	}
	for _, e := range res.Effects {
		switch e {
		case "clearLoading":
			next.ModelLoadingSince = time.Time{}
		case "stampLoading":
			next.ModelLoadingSince = p.loadingSince(rec, ev.At)
		case "wake":
			d.Action = ActionWake
			next.WakeRequestedAt = ev.At
			next.Outcome, next.ReadyAt, next.RefusedStatus = OutcomeNone, time.Time{}, 0
		case "flagStuck":
			d.Stuck = true
		case "recordReady":
			next.Outcome, next.ReadyAt = OutcomeReady, ev.ReadySince
		case "recordNeverReady":
			next.Outcome = OutcomeNeverReady
		case "recordRefused":
			next.Outcome, next.RefusedStatus = OutcomeRefused, ev.HTTPStatus
		case "recordStartFailed":
			next.Outcome = OutcomeStartFailed
		default:
			key, ok := strings.CutPrefix(e, "reply:")
			if !ok {
				return Decision{}, rec, fmt.Errorf("machines: unknown effect %q", e)
			}
			d.Reply = ReplyKey(key)
		}
	}
	if d.Reply != "" {
		d.Text, err = p.policy.Replies.Render(d.Reply, p.replyData(rec, next, ev.At))
		if err != nil {
			return Decision{}, rec, err
		}
	}
	return d, next, nil
}

// replyData fills the reply fields from the record before (what was known)
// and after (the loading clock) the event.
func (p *Pod) replyData(before, after Record, now time.Time) ReplyData {
	t := p.policy.Timings
	d := ReplyData{
		Pod:             before.Pod,
		ExpectedMinutes: wholeMinutes(t.ExpectedWake),
		IdleMinutes:     wholeMinutes(t.PodIdleStop),
		Status:          before.RefusedStatus,
	}
	if !before.WakeRequestedAt.IsZero() {
		d.ElapsedMinutes = wholeMinutes(now.Sub(before.WakeRequestedAt))
		d.WakeRequestedAt = FormatClock(before.WakeRequestedAt, now)
	}
	if !after.ModelLoadingSince.IsZero() {
		d.LoadingMinutes = wholeMinutes(now.Sub(after.ModelLoadingSince))
	}
	if !before.ReadyAt.IsZero() {
		d.ReadyAt = FormatClock(before.ReadyAt, now)
	}
	return d
}

// wholeMinutes is d in whole minutes, rounded down, never negative.
func wholeMinutes(d time.Duration) int {
	if d < 0 {
		return 0
	}
	return int(d / time.Minute)
}

// Equal reports whether r and o hold the same facts (times compared as
// instants, whatever their location or monotonic reading).
func (r Record) Equal(o Record) bool {
	return r.Pod == o.Pod && r.State == o.State && r.Outcome == o.Outcome && r.RefusedStatus == o.RefusedStatus &&
		r.WakeRequestedAt.Equal(o.WakeRequestedAt) && r.ModelLoadingSince.Equal(o.ModelLoadingSince) &&
		r.ReadyAt.Equal(o.ReadyAt)
}
