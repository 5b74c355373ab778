package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// door is a chat.Server whose turns run on a recording fake of the turn
// service, over an agent whose model ("a", the chain; "b" outside it) and
// history are fakes: no wake coordinator, store, clock or socket. Its
// tests are the codec's: what the door decodes and encodes, how it maps a
// turn's end to a status, and which calls of the turn service a request
// makes. The wake behaviour behind those calls is tested in host/turn,
// host/wake and machines, and end to end by the harness's tests. It
// configures no pod: GET /api/pods/{name} is a 404 for every name.
type door struct {
	handler http.Handler
	server  *chat.Server
	turns   *fakeService
	model   *fakeModel // provider "a"
	history *memHistory
}

// newDoor builds a door; mod, when set, changes its config (its Agent
// included) before the server is made.
func newDoor(t *testing.T, mod func(*chat.Config)) *door {
	t.Helper()
	d := &door{
		turns:   &fakeService{},
		model:   &fakeModel{complete: echo},
		history: &memHistory{},
	}
	var tokens atomic.Int64
	cfg := chat.Config{
		Agent: agent.New(agent.Config{
			Chain:   []agent.Provider{{Name: "a", Model: d.model}},
			Others:  []agent.Provider{{Name: "b", Model: &fakeModel{complete: echo}}},
			History: d.history, SystemPrompt: systemPrompt, HistoryMessages: 20, HistoryBytes: 256 << 10,
		}),
		NewToken: func() string { return fmt.Sprintf("tok-%d", tokens.Add(1)) },
	}
	if mod != nil {
		mod(&cfg)
	}
	d.server = chat.NewOnTurns(cfg, d.turns)
	d.handler = d.server.Handler()
	return d
}

// echo is the fake model's answer to the last message.
func echo(_ context.Context, msgs []pluginapi.Message) (string, error) {
	return answerTo(msgs[len(msgs)-1].Content), nil
}

// do serves one request and returns the answer, once the session's turn,
// if any, is over (an answered turn is stored after its handler returns).
func (d *door) do(t *testing.T, method, path, contentType, body string) response {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	d.handler.ServeHTTP(w, r)
	if err := d.server.Drain(t.Context()); err != nil {
		t.Fatalf("drain: %v", err)
	}
	return response{Status: w.Code, Header: w.Header(), Body: w.Body.String()}
}

// post serves one POST /api/chat of req.
func (d *door) post(t *testing.T, req chatReq) response {
	t.Helper()
	return d.do(t, http.MethodPost, "/api/chat", "application/json", jsonOf(t, req))
}

// fakeService is a hand-written turn service (what chat.NewOnTurns
// takes): it records every call, and answers with its function field, or,
// when that is nil, by running the turn's model call and answering with
// the model's answer.
type fakeService struct {
	mu     sync.Mutex
	calls  []string
	run    func(ctx context.Context, ask turn.Ask, call turn.Call[agent.Result]) (turn.Outcome[agent.Result], error)
	wait   func(ctx context.Context, session, provider string, call turn.Call[agent.Result]) (turn.Outcome[agent.Result], error)
	resume func(ctx context.Context, session, key string, has func(string) bool, call turn.Pinned[agent.Result]) (turn.Outcome[agent.Result], error)
}

func (f *fakeService) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// made returns the calls so far, nil when there were none.
func (f *fakeService) made() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeService) Run(ctx context.Context, ask turn.Ask, call turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
	f.record("Run pod=%q send=%s hold=%t", ask.Pod, ask.Send, ask.Hold != nil)
	if f.run != nil {
		return f.run(ctx, ask, call)
	}
	return answeredBy(call(ctx, ask.Send))
}

func (f *fakeService) Wait(ctx context.Context, session, provider string, call turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
	f.record("Wait session=%s provider=%s", session, provider)
	if f.wait != nil {
		return f.wait(ctx, session, provider, call)
	}
	return answeredBy(call(ctx, resolve.NoResend))
}

func (f *fakeService) Resume(ctx context.Context, session, key string, has func(string) bool, call turn.Pinned[agent.Result]) (turn.Outcome[agent.Result], error) {
	f.record("Resume session=%s key=%s", session, key)
	if f.resume != nil {
		return f.resume(ctx, session, key, has, call)
	}
	return answeredBy(call("a")(ctx, resolve.Once))
}

// answeredBy is the outcome of a model call that returned res and err.
func answeredBy(res agent.Result, err error) (turn.Outcome[agent.Result], error) {
	if err != nil {
		return turn.Outcome[agent.Result]{}, err
	}
	return turn.Outcome[agent.Result]{Answer: res, Answered: true}, nil
}

// memHistory is a hand-written agent.History in memory, which records the
// turns stored.
type memHistory struct {
	mu     sync.Mutex
	msgs   map[string][]store.Message
	stored []string // "session: user message"
}

func (m *memHistory) History(_ context.Context, session string, last int) ([]store.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	msgs := m.msgs[session]
	if last <= 0 || len(msgs) == 0 {
		return nil, nil
	}
	return slices.Clone(msgs[max(0, len(msgs)-last):]), nil
}

func (m *memHistory) AppendTurn(_ context.Context, session string, user, assistant store.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.msgs == nil {
		m.msgs = map[string][]store.Message{}
	}
	m.msgs[session] = append(m.msgs[session], user, assistant)
	m.stored = append(m.stored, session+": "+user.Content)
	return nil
}

// turnsStored returns the turns stored so far, nil when none was.
func (m *memHistory) turnsStored() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.stored)
}

// jsonOf is v as JSON.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
