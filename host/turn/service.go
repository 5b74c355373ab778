package turn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Coordinator runs the pod lifecycle machine and its side effects;
// *wake.Coordinator is one. Both doors share it, so a burst across them
// makes one wake.
type Coordinator interface {
	NotReady(ctx context.Context, pod, status, lookup string, modelLoading bool) (machines.Decision, error)
	Record(ctx context.Context, pod string) (machines.Record, error)
	Estimate(pod string) machines.Estimate
}

// Activity learns which turns are in flight, so that the host never stops
// a pod under one; *wake.Coordinator is one.
type Activity interface {
	// Begin reports a turn, held request or resume of pod ("" while its
	// pod is not known) beginning; end reports its end.
	Begin(pod string) (end func())
}

// PodView reports a pod as the conductor sees it; *resolve.Resolver is one.
type PodView interface {
	Lookup(ctx context.Context) (resolve.Resolution, error)
}

// Events pushes each pod's record changes; *events.Hub is one. Neither
// call asks the conductor anything.
type Events interface {
	Subscribe(pod string) (events.Update, *events.Subscription)
	Current(pod string) events.Update
}

// Pendings keeps each session's pending wake: what the service uses of
// store.Pendings, which every store backend serves.
type Pendings interface {
	Pending(ctx context.Context, session string) (p store.Pending, ok bool, err error)
	PutPending(ctx context.Context, session string, p store.Pending) error
	TakePending(ctx context.Context, session, key string) (store.Pending, error)
}

// Config wires a Service. Wake and Pods are required; Policy, Pending and
// Events are for the turns that use them (Resume, Wait and Resume, a Hold).
type Config struct {
	Wake    Coordinator
	Policy  *machines.Pod      // the replies of turns that must not wake (Resume)
	Pods    map[string]PodView // every configured pod, by name
	Pending Pendings           // each session's pending wake (Wait, Resume)
	Events  Events             // the pods' changes, which a Hold waits on
	Clock   clock.Clock        // default clock.Real()
	Logger  *slog.Logger       // default: discard
	NewKey  func() string      // pending wakes' keys (Wait); nil = crypto/rand

	// Activity, when set, is told of every turn in flight (Run, Resume).
	Activity Activity
}

// Service runs turns. It is safe for concurrent use; create it with New.
type Service struct{ cfg Config }

// New returns a Service for cfg.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.NewKey == nil {
		cfg.NewKey = randomKey
	}
	return &Service{cfg: cfg}
}

// Call is a turn's model call, sent as send says (D10). T is what the door
// makes of the model's answer: a chat turn's reply, an OpenAI door's
// stream.
type Call[T any] func(ctx context.Context, send resolve.Send) (T, error)

// Ask is one turn as a door hands it to Run.
type Ask struct {
	// Pod is the pod the turn's model is on: only a not-ready error about
	// it runs the machine. "" takes one about any configured pod (a
	// provider chain); a model on a literal base URL is never not ready.
	Pod  string
	Send resolve.Send
	// Hold, when set, holds a turn whose pod is on its way up instead of
	// replying at once: see Hold.
	Hold *Hold
}

// Said is what the machine said of a turn that found its model not ready.
type Said struct {
	Pod      string
	Decision machines.Decision // its reply and state; the state of a pod that woke is its To
	// Pending is the pending wake a Wait or Resume turn leaves its
	// session, nil for any other turn.
	Pending *store.Pending
}

// Outcome is how a turn ended when it ended without an error: the model's
// answer, or what the machine said, or nothing (the client left a hold).
type Outcome[T any] struct {
	Answer   T
	Answered bool
	Said     Said
	// Left is true when the client left while the turn was held: its
	// prompt never ran and nobody reads an answer.
	Left bool
}

func answered[T any](v T) Outcome[T] { return Outcome[T]{Answer: v, Answered: true} }

// Run runs a turn: call, with ask.Send; when the model is not ready, the
// machine's decision (which may wake the pod, D4), or with ask.Hold a hold
// until the pod is ready and the prompt run once. An error is a failure
// the door answers as such (D5): a provider or config-class failure, a
// not-ready error that may not wake, a store or machine failure; nothing
// was woken for it.
func Run[T any](ctx context.Context, s *Service, ask Ask, call Call[T]) (Outcome[T], error) {
	defer s.begin(ask.Pod)()
	v, err := call(ctx, ask.Send)
	if err == nil {
		return answered(v), nil
	}
	nr, ok := s.wakeable(ask.Pod, err)
	if !ok {
		return Outcome[T]{}, err
	}
	if ask.Hold == nil {
		said, err := s.decide(ctx, nr)
		return Outcome[T]{Said: said}, err
	}
	return hold(ctx, s, nr, *ask.Hold, ask.Pod, call)
}

// wakeable finds a not-ready error the machine may act on: retryable,
// about pod ("" any) and a configured pod (D4, D5).
func (s *Service) wakeable(pod string, err error) (*resolve.NotReadyError, bool) {
	var nr *resolve.NotReadyError
	if !errors.As(err, &nr) || !nr.Retryable || (pod != "" && nr.Pod != pod) {
		return nil, false
	}
	if _, ok := s.cfg.Pods[nr.Pod]; !ok {
		return nil, false
	}
	return nr, true
}

// decide runs the pod lifecycle machine for a not-ready turn.
func (s *Service) decide(ctx context.Context, nr *resolve.NotReadyError) (Said, error) {
	d, err := s.cfg.Wake.NotReady(ctx, nr.Pod, nr.Status, string(nr.Lookup), nr.ModelLoading)
	if err != nil {
		return Said{}, err
	}
	return Said{Pod: nr.Pod, Decision: d}, nil
}

// Errors of a pinned turn (Resume) the doors answer as a conflict: the
// session's pending wake cannot be resumed.
var (
	ErrNoPending       = errors.New("no pending wake for this session")
	ErrPendingMismatch = errors.New("pendingWake does not match this session's pending wake")
	ErrPodGone         = errors.New("the pod this wake was pinned to is no longer configured")
	ErrProviderGone    = errors.New("the provider this wake was pinned to is no longer configured")
)

// Wait runs a turn pinned to provider that must keep its prompt: sent
// NoResend; a turn that finds the model not ready runs the machine (which
// may wake) and leaves session a pending wake instead of running the
// prompt (#715), to Resume once the pod is freshly ready.
func Wait[T any](ctx context.Context, s *Service, session, provider string, call Call[T]) (Outcome[T], error) {
	out, err := Run(ctx, s, Ask{Send: resolve.NoResend}, call)
	if err != nil || out.Answered {
		return out, err
	}
	rec, err := s.cfg.Wake.Record(ctx, out.Said.Pod)
	if err != nil {
		return Outcome[T]{}, err
	}
	p := store.Pending{
		Key: s.cfg.NewKey(), Pod: out.Said.Pod, Provider: provider,
		WakeRequestedAt: rec.WakeRequestedAt, State: string(out.Said.Decision.To), CreatedAt: s.cfg.Clock.Now(),
	}
	if err := s.cfg.Pending.PutPending(ctx, session, p); err != nil {
		return Outcome[T]{}, err
	}
	out.Said.Pending = &p
	return out, nil
}

// Pinned is the model call of a resumed turn, on the provider its pending
// wake was pinned to.
type Pinned[T any] func(provider string) Call[T]

// Resume runs the prompt of session's pending wake key once the model is
// freshly ready, on the pinned provider, exactly once (resolve.Once). It
// never wakes (#715): while the pod is not freshly ready it says the
// state's reply and keeps the pending wake. has reports whether a provider
// is still configured.
func Resume[T any](ctx context.Context, s *Service, session, key string, has func(provider string) bool, call Pinned[T]) (Outcome[T], error) {
	p, ok, err := s.cfg.Pending.Pending(ctx, session)
	switch {
	case err != nil:
		return Outcome[T]{}, err
	case !ok:
		return Outcome[T]{}, ErrNoPending
	case p.Key != key:
		return Outcome[T]{}, ErrPendingMismatch
	}
	if _, ok := s.cfg.Pods[p.Pod]; !ok {
		s.cfg.Logger.Error("resume: pinned pod is no longer configured", "session", session, "pod", p.Pod)
		return Outcome[T]{}, ErrPodGone
	}
	if !has(p.Provider) {
		s.cfg.Logger.Error("resume: pinned provider is no longer configured", "session", session, "provider", p.Provider)
		return Outcome[T]{}, ErrProviderGone
	}
	defer s.begin(p.Pod)()
	kept := func(d machines.Decision) Outcome[T] {
		return Outcome[T]{Said: Said{Pod: p.Pod, Decision: d, Pending: &p}}
	}
	if rec, view, fresh := s.readiness(ctx, p.Pod); !fresh {
		return kept(s.reply(rec, view)), nil
	}
	// The key is consumed before the turn runs: a turn that ran, whatever
	// its outcome, can never be resumed twice.
	if _, err := s.cfg.Pending.TakePending(ctx, session, p.Key); err != nil {
		return Outcome[T]{}, ErrNoPending
	}
	v, err := call(p.Provider)(ctx, resolve.Once)
	if err == nil {
		return answered(v), nil
	}
	var nr *resolve.NotReadyError
	if !errors.As(err, &nr) && !resolve.NeverSent(err) {
		return Outcome[T]{}, err
	}
	// The pod stopped between the readiness check and the completion, and
	// the prompt provably never reached a model: keep the pending wake, so
	// the client can resume once the pod is back, and wake nothing.
	if err := s.cfg.Pending.PutPending(ctx, session, p); err != nil {
		return Outcome[T]{}, err
	}
	var d machines.Decision
	if nr != nil && nr.ModelLoading {
		// RUNNING and not answering is an event the machine takes (it
		// never wakes): loading, stuck or crashed.
		said, err := s.decide(ctx, nr)
		if err != nil {
			return Outcome[T]{}, err
		}
		d = said.Decision
	} else {
		rec, view, _ := s.readiness(ctx, p.Pod)
		d = s.reply(rec, view)
	}
	s.cfg.Logger.Warn("resume: the pod stopped before the turn ran; pending wake kept", "session", session, "pod", p.Pod)
	return kept(d), nil
}

// readiness asks the conductor about pod now (the answer reaches the
// machine through the resolver's observer) and reports whether the model
// is freshly ready: the machine says ready, and the conductor said so now,
// not from cache. It also returns the pod's record and view, for the
// state's reply (reply) when it is not.
func (s *Service) readiness(ctx context.Context, pod string) (machines.Record, machines.View, bool) {
	view := machines.View{Lookup: machines.LookupUnreadable}
	if pv, ok := s.cfg.Pods[pod]; ok {
		if res, err := pv.Lookup(ctx); err == nil {
			view = machines.View{Status: res.Status, IsRunning: res.IsRunning, Lookup: string(res.Lookup),
				ReadySince: res.ReadySince, FromCache: res.FromCache}
		}
	}
	rec, err := s.cfg.Wake.Record(ctx, pod)
	if err != nil {
		return machines.NewRecord(pod), machines.View{Lookup: machines.LookupUnreadable}, false
	}
	_, ready := reports(rec, view)
	return rec, view, ready
}

// reply is the state's reply for a turn that must not wake.
func (s *Service) reply(rec machines.Record, view machines.View) machines.Decision {
	return s.describe(rec, view, s.cfg.Clock.Now(), s.cfg.Wake.Estimate(rec.Pod))
}

// begin reports a turn of pod in flight to the Activity, if any.
func (s *Service) begin(pod string) (end func()) {
	if s.cfg.Activity == nil {
		return func() {}
	}
	return s.cfg.Activity.Begin(pod)
}

// randomKey is 32 hex digits from crypto/rand, which never fails.
func randomKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
