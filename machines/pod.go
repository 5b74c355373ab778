package machines

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/specs"
)

// The states of the pod lifecycle (specs/pod-lifecycle.toml says what each
// means).
const (
	Asleep      engine.State = "asleep"
	Waking      engine.State = "waking"
	Loading     engine.State = "loading"
	Ready       engine.State = "ready"
	Stuck       engine.State = "stuck"
	Crashed     engine.State = "crashed"
	Stopped     engine.State = "stopped"
	Idled       engine.State = "idled"
	Refused     engine.State = "refused"
	StartFailed engine.State = "start-failed"
	NeverReady  engine.State = "never-ready"
)

// The events (triggers) the pod lifecycle takes.
const (
	// Turns.
	NotReady     engine.Trigger = "notReady"     // the conductor says the pod is not running
	ModelLoading engine.Trigger = "modelLoading" // RUNNING, but the model does not answer (D7)
	Answered     engine.Trigger = "answered"     // the model answered a turn
	Unreadable   engine.Trigger = "unreadable"   // the conductor could not read the pod
	Asked        engine.Trigger = "asked"        // a turn that must not wake asks where the pod is (Describe)
	// What the conductor says, from any read of the pod (see Observe).
	PodDown        engine.Trigger = "podDown"    // not running
	PodUp          engine.Trigger = "podUp"      // RUNNING with an endpoint, no readySince
	ReadySinceSeen engine.Trigger = "readySince" // RUNNING with a readySince
	// Outcomes of the wake on record (D12, #684); Event.Wake names the wake.
	StartRefused   engine.Trigger = "refused"     // the conductor answered the start with a refusal
	StartNotSent   engine.Trigger = "startFailed" // the start never reached the conductor
	NeverReadySeen engine.Trigger = "neverReady"  // the watch gave up after wake_watch
	// The host's own stop of a ready pod (host/wake's idle stop);
	// Event.StopReason says why.
	HostStopped engine.Trigger = "hostStopped"
)

// Why the host stopped a pod: Event.StopReason, Record.StopReason,
// Wake.Stop.
const (
	StopIdle     = "idle"     // it answered nothing and held nothing for stop_after_idle
	StopUnserved = "unserved" // woken, ready, it served nobody, and nobody waited for stop_unserved_after
)

// Lookup values a conductor reports.
const (
	LookupFound      = "FOUND"
	LookupNotFound   = "NOT_FOUND"
	LookupUnreadable = "UNREADABLE"
)

// Record is everything the machine remembers about one pod. It is a value:
// Decide returns a new one and never changes the one it is given. What
// became of the current wake is the State; the fields are the facts its
// replies quote.
type Record struct {
	Pod               string       `json:"pod"`
	State             engine.State `json:"state"`
	WakeRequestedAt   time.Time    `json:"wakeRequestedAt"`   // zero: no wake on record
	ModelLoadingSince time.Time    `json:"modelLoadingSince"` // zero: the loading clock is not running
	ReadyAt           time.Time    `json:"readyAt"`           // when the last ready boot became ready
	RefusedStatus     int          `json:"refusedStatus"`     // in Refused: the start's HTTP status
	// RunningAt is when the pod was first seen up during the wake on
	// record (effect stampRunning), zero until then; the wake clears it.
	RunningAt time.Time `json:"runningAt"`
	// Served is true once the model answered a turn while this wake is on
	// record (effect recordServed); the wake clears it.
	Served bool `json:"served"`
	// StoppedAt and StopReason are when and why the host stopped the pod
	// (effect recordStopped: StopIdle, StopUnserved); zero and "" until it
	// does. The wake clears them.
	StoppedAt  time.Time `json:"stoppedAt,omitzero"`
	StopReason string    `json:"stopReason,omitempty"`
	// AnsweredAt is when the pod's model last answered a user's turn, or
	// a turn of it began, as the host that ran it stamped it: the idle stop of every host
	// sharing the store measures from it (host/wake). A host stamps it
	// only when the stored stamp is a minute old or more, so it may be up
	// to a minute older than the last answer or turn. The machine never reads or
	// changes it, and a wake keeps it; zero until a stamp.
	AnsweredAt time.Time `json:"answeredAt,omitzero"`
}

// NewRecord returns the record of a pod nothing is known about.
func NewRecord(pod string) Record { return Record{Pod: pod, State: Asleep} }

// UnmarshalJSON reads a record, including one stored before the outcome of
// a wake became its state: such a record kept it in "outcome", and a start
// that never reached the conductor was in state "refused".
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	var v struct {
		plain
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Record(v.plain)
	if v.Outcome == "start-failed" && r.State == Refused {
		r.State = StartFailed
	}
	return nil
}

// Outcome names what became of the wake on record, "" while it is unknown
// or there is none: its state's outcome in the table (ready also once it
// stopped or crashed, refused, start-failed, never-ready).
func (r Record) Outcome() string {
	if r.WakeRequestedAt.IsZero() {
		return ""
	}
	return Facts(r.State).Outcome
}

// Event is something that happened to a pod.
type Event struct {
	Trigger engine.Trigger
	At      time.Time // now, as the caller's clock says
	// NotReady, ModelLoading, Unreadable: the conductor's status and lookup,
	// for the decision's log line.
	Status string
	Lookup string
	// ReadySinceSeen, PodUp and Answered: the conductor's readySince, zero
	// when it gave none.
	ReadySince time.Time
	// Answered: the answer was the wake's watch probing the model, not a
	// user's turn. It makes the wake ready like any answer, but serves
	// nobody.
	Probe bool
	// StartRefused: the start's HTTP status.
	HTTPStatus int
	// HostStopped: why the host stopped the pod (StopIdle, StopUnserved).
	StopReason string
	// Outcome events: the WakeRequestedAt of the wake they belong to. An
	// outcome of any other wake is dropped.
	Wake time.Time
	// Estimate is how long this pod's wakes take, from its wake log
	// (EstimateWake): the replies quote it, and past a measured one the
	// still-waking reply says the wake is late. The zero value is no
	// measured wake: expected_wake.
	Estimate Estimate
}

// Action is what the host must do.
type Action string

// The actions of a decision. Observations and outcomes decide neither.
const (
	ActionNone Action = ""
	ActionWake Action = "wake"
	ActionWait Action = "wait"
)

// Decision is the machine's answer to one event.
type Decision struct {
	Action  Action
	Reply   ReplyKey // "" when the event gets no reply
	Text    string   // the reply, rendered
	Stuck   bool     // D9: the host logs it at error level, marked STUCK
	Crashed bool     // the host logs it at error level, marked CRASHED
	From    engine.State
	To      engine.State
	Row     engine.Row // the row taken; zero when the event changed nothing
	// Ignored is true when the event changes nothing in this state (an
	// ignore of the table, or an outcome of a wake no longer on record).
	Ignored bool
}

// Policy is what Decide decides by: the timings and the reply wording.
type Policy struct {
	Timings Timings
	Replies *Replies
	// Backends names, by pod, the pod's GPU backend as the replies say it
	// ({{.Backend}}); a pod not in it is on DefaultBackend.
	Backends map[string]string
}

// DefaultBackend is how the replies name the GPU backend of a pod that
// Policy.Backends does not name: the design's conductor.
const DefaultBackend = "the conductor"

// DefaultPolicy is the design's timings and wording.
func DefaultPolicy() Policy {
	return Policy{Timings: DefaultTimings(), Replies: MustDefaultReplies()}
}

// Pod is the compiled pod lifecycle machine. It is safe for concurrent use by
// many pods; Decide calls for one pod must be serialised by the caller.
type Pod struct {
	policy  Policy
	machine *engine.Machine[Record, Event]
	facts   facts
}

// NewPod compiles the embedded pod lifecycle table with policy.
func NewPod(policy Policy) (*Pod, error) {
	l, err := podLifecycle()
	if err != nil {
		return nil, err
	}
	return newPod(l, policy)
}

// podLifecycle is the embedded table, parsed once: it never changes, and
// newPod only reads it (engine.Compile and newFacts copy what they keep).
var podLifecycle = sync.OnceValues(func() (specs.Lifecycle, error) {
	return specs.ParseLifecycle(specs.PodLifecycleSource())
})

func newPod(l specs.Lifecycle, policy Policy) (*Pod, error) {
	if policy.Replies == nil {
		return nil, errors.New("machines: policy has no replies")
	}
	p := &Pod{policy: policy, facts: newFacts(l.States)}
	m, err := engine.Compile(l.Table, func(r Record) engine.State { return r.State }, p.guards())
	if err != nil {
		return nil, err
	}
	p.machine = m
	return p, nil
}

// Table returns the transition table the machine runs.
func (p *Pod) Table() engine.Table { return p.machine.Table() }

// Facts is state s's facts in the table the machine runs.
func (p *Pod) Facts(s engine.State) StateFacts { return p.facts.of(s) }

// Timings returns the timings the machine decides by.
func (p *Pod) Timings() Timings { return p.policy.Timings }

// inWindow reports whether r's wake was requested no longer than
// wake_window before now (D1, edge inclusive).
func (p *Pod) inWindow(r Record, now time.Time) bool {
	return !r.WakeRequestedAt.IsZero() && now.Sub(r.WakeRequestedAt) <= p.policy.Timings.WakeWindow
}

// wakeOnClock reports whether r's wake was requested no longer than
// wake_watch before now.
func (p *Pod) wakeOnClock(r Record, now time.Time) bool {
	return !r.WakeRequestedAt.IsZero() && now.Sub(r.WakeRequestedAt) <= p.policy.Timings.WakeWatch
}

// loadingSince is the loading clock after a modelLoading event at now: the
// running clock, else the wake's request when a wake is on the clock, else
// now (D9).
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

func (p *Pod) loadingStuck(r Record, now time.Time) bool {
	return now.Sub(p.loadingSince(r, now)) >= p.policy.Timings.LoadingCeiling
}

// BootOfWake reports whether a readySince belongs to the boot of r's wake:
// no earlier than the wake minus ready_slack, or any when no wake is on
// record (D12). A readySince before that is an earlier boot's.
func (p *Pod) BootOfWake(r Record, readySince time.Time) bool {
	return !readySince.IsZero() &&
		(r.WakeRequestedAt.IsZero() || !readySince.Before(r.WakeRequestedAt.Add(-p.policy.Timings.ReadySlack)))
}

func (p *Pod) guards() map[string]engine.Guard[Record, Event] {
	type G = engine.Guard[Record, Event]
	inWindow := func(r Record, ev Event, _ time.Time) bool { return p.inWindow(r, ev.At) }
	late := func(r Record, ev Event, _ time.Time) bool { return p.late(r, ev.Estimate, ev.At) }
	stuck := func(r Record, ev Event, _ time.Time) bool { return p.loadingStuck(r, ev.At) }
	onClock := func(r Record, ev Event, _ time.Time) bool { return p.wakeOnClock(r, ev.At) }
	boot := func(r Record, ev Event, _ time.Time) bool { return p.BootOfWake(r, ev.ReadySince) }
	later := func(r Record, ev Event, _ time.Time) bool { return ev.ReadySince.After(r.ReadyAt) }
	not := func(g G) G { return func(r Record, ev Event, now time.Time) bool { return !g(r, ev, now) } }
	return map[string]G{
		"inWindowOnTime": func(r Record, ev Event, now time.Time) bool {
			return inWindow(r, ev, now) && !late(r, ev, now)
		},
		"inWindowLate": func(r Record, ev Event, now time.Time) bool {
			return inWindow(r, ev, now) && late(r, ev, now)
		},
		"beyondWindow": not(inWindow),
		"loadingStuck": stuck,
		"loadingOnWake": func(r Record, ev Event, now time.Time) bool {
			return !stuck(r, ev, now) && onClock(r, ev, now)
		},
		"loadingNoWake": func(r Record, ev Event, now time.Time) bool {
			return !stuck(r, ev, now) && !onClock(r, ev, now)
		},
		"wakeOnClock":  onClock,
		"wakeOffClock": not(onClock),
		"bootOfWake":   boot,
		"earlierBoot":  not(boot),
		"laterBoot":    later,
		"sameBoot":     not(later),
	}
}

// outcome reports whether tr is an outcome of a wake, which only the wake
// on record may have.
func outcome(tr engine.Trigger) bool {
	return tr == StartRefused || tr == StartNotSent || tr == NeverReadySeen
}

// Decide runs ev through the pod lifecycle for rec and returns the decision
// and the new record. rec is not changed. An event the table does not handle
// is an *engine.UnhandledError.
func (p *Pod) Decide(rec Record, ev Event) (Decision, Record, error) {
	if rec.State == "" {
		rec.State = Asleep
	}
	if outcome(ev.Trigger) && (rec.WakeRequestedAt.IsZero() || !ev.Wake.Equal(rec.WakeRequestedAt)) {
		// A superseded wake's outcome says nothing about the wake on record.
		return Decision{From: rec.State, To: rec.State, Ignored: true}, rec, nil
	}
	res, err := p.machine.Fire(rec, ev.Trigger, ev, ev.At)
	if err != nil {
		return Decision{}, rec, err
	}
	d := Decision{From: res.From, To: res.To, Row: res.Row, Ignored: res.Ignored}
	switch ev.Trigger {
	case NotReady, ModelLoading, Unreadable:
		d.Action = ActionWait
	}
	next := rec
	next.State = res.To
	readyNow := false // recordReady ran: next.ReadyAt is this event's
	for _, e := range res.Effects {
		switch e {
		case "clearLoading":
			next.ModelLoadingSince = time.Time{}
		case "stampLoading":
			next.ModelLoadingSince = p.loadingSince(rec, ev.At)
		case "wake":
			d.Action = ActionWake
			next.WakeRequestedAt = ev.At
			next.RefusedStatus = 0
			next.RunningAt = time.Time{}
			next.Served = false
			next.StoppedAt, next.StopReason = time.Time{}, ""
		case "flagStuck":
			d.Stuck = true
		case "flagCrashed":
			d.Crashed = true
		case "recordReady":
			next.ReadyAt = ev.At
			if p.BootOfWake(rec, ev.ReadySince) {
				next.ReadyAt = ev.ReadySince
			}
			readyNow = true
		case "stampRunning":
			// Only a wake in progress with the pod down sees it up for
			// the first time; from any other state it was seen already,
			// or no wake of ours is in progress.
			if from := p.facts.of(rec.State); from.InProgress && from.Group == specs.Down && next.RunningAt.IsZero() {
				// Seen up first with a readySince, the pod was up by
				// then: RUNNING is never after ready.
				next.RunningAt = ev.At
				if readyNow && next.ReadyAt.Before(ev.At) {
					next.RunningAt = next.ReadyAt
				}
			}
		case "recordServed":
			if !ev.Probe {
				next.Served = true
			}
		case "recordRefused":
			next.RefusedStatus = ev.HTTPStatus
		case "recordStopped":
			next.StoppedAt, next.StopReason = ev.At, ev.StopReason
		default:
			key, ok := strings.CutPrefix(e, "reply:")
			if !ok {
				return Decision{}, rec, fmt.Errorf("machines: unknown effect %q", e)
			}
			d.Reply = ReplyKey(key)
		}
	}
	if d.Reply != "" {
		d.Text, err = p.policy.Replies.Render(d.Reply, p.replyData(rec, next, ev.Estimate, ev.At))
		if err != nil {
			return Decision{}, rec, err
		}
	}
	return d, next, nil
}

// replyData fills the reply fields from the record before (what was known)
// and after (the loading clock, and the wake the estimate counts for: a
// wake decided now is the one its reply announces) the event.
func (p *Pod) replyData(before, after Record, est Estimate, now time.Time) ReplyData {
	t := p.policy.Timings
	d := ReplyData{
		Pod:             before.Pod,
		ExpectedMinutes: wholeMinutes(t.ExpectedWake),
		EtaMinutes:      p.etaMinutes(est),
		IdleMinutes:     wholeMinutes(t.PodIdleStop),
		Status:          before.RefusedStatus,
		Backend:         DefaultBackend,
	}
	if b, ok := p.policy.Backends[before.Pod]; ok {
		d.Backend = b
	}
	if at, remaining, ok := p.Eta(after, est, now); ok {
		d.RemainingMinutes = roundMinutes(remaining)
		d.EtaAt = FormatClock(at, now)
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
	return r.Pod == o.Pod && r.State == o.State && r.RefusedStatus == o.RefusedStatus &&
		r.WakeRequestedAt.Equal(o.WakeRequestedAt) && r.ModelLoadingSince.Equal(o.ModelLoadingSince) &&
		r.ReadyAt.Equal(o.ReadyAt) && r.RunningAt.Equal(o.RunningAt) && r.Served == o.Served &&
		r.StoppedAt.Equal(o.StoppedAt) && r.StopReason == o.StopReason && r.AnsweredAt.Equal(o.AnsweredAt)
}
