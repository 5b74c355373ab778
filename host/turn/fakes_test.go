package turn_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// calls records what the service asked of its parts, in order, as
// "Part argument...": the model, the coordinator, the pod view and the
// pending wakes all write to one list.
type calls struct {
	mu   sync.Mutex
	list []string
}

func (c *calls) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, fmt.Sprintf(format, args...))
}

// assert checks the calls so far and forgets them.
func (c *calls) assert(t *testing.T, want ...string) {
	t.Helper()
	c.mu.Lock()
	got := c.list
	c.list = nil
	c.mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// fakeCoord is a turn.Coordinator: NotReady answers the next decision of
// its script (the last one again when it runs out), Record answers rec.
type fakeCoord struct {
	calls     *calls
	mu        sync.Mutex
	decisions []machines.Decision
	rec       machines.Record
	err       error // NotReady's, when set
}

func (f *fakeCoord) NotReady(_ context.Context, pod, status, lookup string, modelLoading bool) (machines.Decision, error) {
	f.calls.add("NotReady %s %s %s loading=%v", pod, status, lookup, modelLoading)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return machines.Decision{}, f.err
	}
	d := f.decisions[0]
	if len(f.decisions) > 1 {
		f.decisions = f.decisions[1:]
	}
	return d, nil
}

func (f *fakeCoord) Record(_ context.Context, pod string) (machines.Record, error) {
	f.calls.add("Record %s", pod)
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rec
	r.Pod = pod
	return r, nil
}

func (f *fakeCoord) Estimate(string) machines.Estimate { return machines.Estimate{} }

// fakePod is a turn.PodView whose Lookup answers res.
type fakePod struct {
	calls *calls
	mu    sync.Mutex
	res   resolve.Resolution
}

func (f *fakePod) Lookup(context.Context) (resolve.Resolution, error) {
	f.calls.add("Lookup")
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.res, nil
}

// fakePending is an in-memory turn.Pendings.
type fakePending struct {
	calls *calls
	mu    sync.Mutex
	m     map[string]store.Pending
}

func (f *fakePending) Pending(_ context.Context, session string) (store.Pending, bool, error) {
	f.calls.add("Pending %s", session)
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.m[session]
	return p, ok, nil
}

func (f *fakePending) PutPending(_ context.Context, session string, p store.Pending) error {
	f.calls.add("PutPending %s %s", session, p.Key)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[session] = p
	return nil
}

func (f *fakePending) TakePending(_ context.Context, session, key string) (store.Pending, error) {
	f.calls.add("TakePending %s %s", session, key)
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.m[session]
	switch {
	case !ok:
		return store.Pending{}, store.ErrNoPending
	case p.Key != key:
		return store.Pending{}, store.ErrPendingMismatch
	}
	delete(f.m, session)
	return p, nil
}

// model is a turn's model call: each call is recorded with its send mode
// and answers the next result of its script (the last one again).
type model struct {
	calls   *calls
	mu      sync.Mutex
	results []error // nil: the model answers "answer"
}

func (m *model) call(_ context.Context, send resolve.Send) (string, error) {
	m.calls.add("model %s", send)
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.results[0]
	if len(m.results) > 1 {
		m.results = m.results[1:]
	}
	if err != nil {
		return "", err
	}
	return "answer", nil
}

func (m *model) answers(results ...error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results = results
}

// fixture is a Service on fakes: pod qwen, asleep at the conductor.
type fixture struct {
	calls   *calls
	coord   *fakeCoord
	pod     *fakePod
	pending *fakePending
	model   *model
	hub     *events.Hub
	svc     *turn.Service
}

func newFixture(t *testing.T, change func(*fixture, *turn.Config)) *fixture {
	t.Helper()
	policy, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	c := &calls{}
	f := &fixture{
		calls:   c,
		coord:   &fakeCoord{calls: c, decisions: []machines.Decision{waking}},
		pod:     &fakePod{calls: c, res: resolve.Resolution{Pod: "qwen", Status: "EXITED", Lookup: pluginapi.LookupFound}},
		pending: &fakePending{calls: c, m: map[string]store.Pending{}},
		model:   &model{calls: c, results: []error{nil}},
		hub:     events.New(0),
	}
	keys := 0
	cfg := turn.Config{
		Wake: f.coord, Policy: policy, Pods: map[string]turn.PodView{"qwen": f.pod}, Pending: f.pending,
		NewKey: func() string { keys++; return fmt.Sprintf("key-%d", keys) },
	}
	if change != nil {
		change(f, &cfg)
	}
	f.svc = turn.New(cfg)
	return f
}

// asleep is pod qwen's not-ready error, EXITED.
func asleep() error {
	return resolve.NewNotReadyError("qwen", resolve.Resolution{Status: "EXITED", Lookup: pluginapi.LookupFound}, false)
}

// neverSent is a failure that proves the prompt never reached a model.
func neverSent() error {
	return &resolve.ProviderError{Provider: "qwen", Status: 404, Err: &pluginapi.CompletionError{Status: 404}}
}

// The machine's decisions the fakes answer, with the default replies.
var (
	replies = machines.MustDefaultReplies()
	waking  = decision(machines.ActionWake, machines.ReplyWaking, machines.Asleep, machines.Waking)
	still   = decision(machines.ActionWait, machines.ReplyStillWaking, machines.Waking, machines.Waking)
	stuck   = decision(machines.ActionWait, machines.ReplyStuck, machines.Loading, machines.Stuck)
)

func decision(a machines.Action, key machines.ReplyKey, from, to engine.State) machines.Decision {
	text, err := replies.Render(key, machines.ReplyData{Pod: "qwen", ExpectedMinutes: 9, EtaMinutes: 9})
	if err != nil {
		panic(err)
	}
	return machines.Decision{Action: a, Reply: key, Text: text, From: from, To: to}
}

// publish tells the hub that pod qwen's record is now rec, as this host's
// coordinator would after a change decided at at.
func (f *fixture) publish(rec machines.Record, trigger engine.Trigger, status string, at time.Time) {
	rec.Pod = "qwen"
	f.hub.Publish(wake.Change{After: rec, Event: machines.Event{Trigger: trigger, Status: status, Lookup: machines.LookupFound, At: at}})
}
