package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// t0 is the first live wake-on-chat's first message, 2026-09-09 12:26:25 UTC.
var t0 = time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)

const (
	// waitLimit bounds every wait for background work; hitting it fails the test.
	waitLimit = 10 * time.Second
	// proxyURL is the pod's RunPod proxy. It must never reach a response or a
	// log line.
	proxyURL     = "https://kcbbg9igl0xdaz-8000.proxy.runpod.net"
	systemPrompt = "You are Rig-E. Answer briefly."
	modelName    = "qwen2.5-32b-instruct"
	// providerFailed is the generic 502 body, byte for byte (D5).
	providerFailed = `{"error":"the agent provider failed"}`
	// inFlightLine is the #684 log line of a start whose client timed out.
	inFlightLine = "wake requested for pod qwen: in flight (client timed out after 3 s; the conductor continues)"
)

// The replies the door must give, rendered from the default wording (the
// host's own, machines.DefaultReplies) with the data the default policy
// fills for pod qwen: the estimate is expected_wake while no wake has
// completed, pod_idle_stop is quoted in minutes, the backend is the
// conductor. Each pins its reply and the fields of its case (minutes, a
// time, a status); the wording itself is machines' to pin
// (TestDefaultRepliesWording), so a change of wording breaks no test here.
// RemainingMinutes and EtaAt, which no default reply quotes, are left zero.
var (
	replyWaking        = render(machines.ReplyWaking, nil)
	replyRewake        = render(machines.ReplyRewake, nil)
	replyLoading       = render(machines.ReplyLoading, nil)
	replyUnreadable    = render(machines.ReplyUnreadable, nil)
	replyWakeFailed    = render(machines.ReplyWakeFailed, nil)
	replyResumeWaiting = render(machines.ReplyResumeWaiting, nil)
)

// render is the host's default reply key for pod qwen (e2e.Render).
var render = e2e.Render

// replyStillWaking is the reply min whole minutes into a wake.
func replyStillWaking(min int) string {
	return render(machines.ReplyStillWaking, func(d *machines.ReplyData) { d.ElapsedMinutes = min })
}

// replyStillWakingLate is the reply min whole minutes into a wake that has
// outrun its measured estimate of eta minutes.
func replyStillWakingLate(min, eta int) string {
	return render(machines.ReplyStillWakingLate, func(d *machines.ReplyData) { d.ElapsedMinutes, d.EtaMinutes = min, eta })
}

// replyLoadingWaking is the reply min whole minutes into a wake whose pod
// is up and whose model loads.
func replyLoadingWaking(min int) string {
	return render(machines.ReplyLoadingWaking, func(d *machines.ReplyData) { d.ElapsedMinutes = min })
}

// replyStuck is the reply once the model has loaded for min whole minutes,
// past the loading ceiling.
func replyStuck(min int) string {
	return render(machines.ReplyStuck, func(d *machines.ReplyData) { d.LoadingMinutes = min })
}

// replyReadyThenStopped is the reply after the boot that was ready at at
// stopped; it wakes the pod again, expected in eta minutes.
func replyReadyThenStopped(at string, eta int) string {
	return render(machines.ReplyReadyThenStopped, func(d *machines.ReplyData) { d.ReadyAt, d.EtaMinutes = at, eta })
}

// replyNeverReady is the reply after the wake requested at at never became
// ready; it wakes the pod again.
func replyNeverReady(at string) string {
	return render(machines.ReplyNeverReady, func(d *machines.ReplyData) { d.WakeRequestedAt = at })
}

// replyCrashed is the reply after the model that answered at at stopped
// answering on a RUNNING pod.
func replyCrashed(at string) string {
	return render(machines.ReplyCrashed, func(d *machines.ReplyData) { d.ReadyAt = at })
}

// replyRefused is the reply after the conductor refused the start with
// status; it wakes the pod again.
func replyRefused(status int) string {
	return render(machines.ReplyRefused, func(d *machines.ReplyData) { d.Status = status })
}

// harness is a chat.Server built from the real store, fake clock, policy,
// wake coordinator, resolver, models and agent, with fakes only at the plugin
// boundary: gpu, provA (provider "a", on pod qwen) and provB (provider "b",
// a literal base_url).
type harness struct {
	clock    *fakeclock.Clock
	store    *store.Store
	gpu      *fakeGPU
	provA    *fakeProvider
	provB    *fakeProvider
	resolver *resolve.Resolver
	policy   *machines.Pod
	coord    *wake.Coordinator
	logger   *slog.Logger
	logs     *logSink
	// outcomes and watchEnds receive the coordinator's Started and Watched
	// hooks: a start's outcome fed to the machine and logged, a watch
	// returned after its lines.
	outcomes  chan string
	watchEnds chan time.Time
	models    map[string]agent.Model
	tokens    atomic.Int64
	api       *api           // the server whose chain is ["a"]
	servers   []*chat.Server // every server, for Wait
	// listen serves a handler until the test ends: on a loopback socket
	// (listenTCP), or in memory for a harness in a synctest bubble
	// (listenPipe).
	listen func(t *testing.T, handler http.Handler) *api
}

// TestMain checks, once every test has run, that none left a goroutine
// behind: the tests run in parallel, so a check per test would see the
// others'. A test in a synctest bubble (each property sequence) also
// fails on its own when it leaves one: synctest.Test waits for them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newHarness builds the parts with the pod asleep and serves chain ["a"]
// on loopback sockets. At the end of the test it closes the servers, the
// coordinator and the store, and checks that no URL was logged.
func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessOn(t, listenTCP)
}

// newBubbleHarness is newHarness for a test inside a synctest bubble: its
// servers listen in memory, so synctest.Wait sees their connections
// blocked; build it inside the bubble.
func newBubbleHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessOn(t, listenPipe)
}

func newHarnessOn(t *testing.T, listen func(*testing.T, http.Handler) *api) *harness {
	t.Helper()
	h := &harness{
		listen: listen,
		clock:  fakeclock.New(t0),
		gpu:    newFakeGPU(asleepPod()),
		provA:  &fakeProvider{},
		provB:  &fakeProvider{},
		logs:   newLogSink(),
	}
	t.Cleanup(func() {
		if text := h.logs.String(); strings.Contains(text, "://") || strings.Contains(text, "runpod") {
			t.Errorf("the log holds a URL:\n%s", text)
		}
	})
	st, err := store.Open(filepath.Join(t.TempDir(), "wake.db"))
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("store close: %v", err)
		}
	})
	h.policy, err = machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	h.logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.outcomes, h.watchEnds = make(chan string, 64), make(chan time.Time, 64)
	h.coord = wake.New(h.wakeConfig())
	t.Cleanup(func() { h.closeCoordinator(t) })
	h.resolver = resolve.NewResolver(h.gpu, "qwen", "/v1")
	h.resolver.SetObserver(h.coord)
	h.models = map[string]agent.Model{
		"a": &resolve.Model{Name: "a", Provider: h.provA, Resolver: h.resolver, ModelName: modelName},
		"b": &resolve.Model{Name: "b", Provider: h.provB, BaseURL: "https://api.example.com/v1", ModelName: "fallback"},
	}
	h.api = h.serve(t, []string{"a"}, nil)
	return h
}

// serve starts another chat.Server over the harness's parts, with chain
// (the other models configured outside it) and mod applied to its config.
func (h *harness) serve(t *testing.T, chain []string, mod func(*chat.Config)) *api {
	t.Helper()
	var inChain, others []agent.Provider
	for _, name := range chain {
		inChain = append(inChain, agent.Provider{Name: name, Model: h.models[name]})
	}
	for _, name := range slices.Sorted(maps.Keys(h.models)) {
		if !slices.Contains(chain, name) {
			others = append(others, agent.Provider{Name: name, Model: h.models[name]})
		}
	}
	newToken := func() string { return fmt.Sprintf("tok-%d", h.tokens.Add(1)) }
	pods := map[string]turn.PodView{"qwen": h.resolver}
	cfg := chat.Config{
		Agent: agent.New(agent.Config{
			Chain: inChain, Others: others, History: h.store,
			SystemPrompt: systemPrompt, HistoryMessages: 20, HistoryBytes: 256 << 10,
		}),
		Service: turn.New(turn.Config{
			Wake: h.coord, Policy: h.policy, Pods: pods, Pending: h.store, Clock: h.clock, Logger: h.logger, NewKey: newToken,
		}),
		Wake:     h.coord,
		Policy:   h.policy,
		Pods:     pods,
		Clock:    h.clock,
		Logger:   h.logger,
		NewToken: newToken,
	}
	if mod != nil {
		mod(&cfg)
	}
	cs := chat.New(cfg)
	h.servers = append(h.servers, cs)
	return h.listen(t, cs.Handler())
}

// listenTCP serves handler on a loopback socket until the test ends.
func listenTCP(t *testing.T, handler http.Handler) *api {
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL, client: srv.Client()}
}

// listenPipe serves handler on in-memory connections (plugintest.PipeListener) until the
// test ends; its client dials them.
func listenPipe(t *testing.T, handler http.Handler) *api {
	l := plugintest.NewPipeListener()
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(l) }()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return l.Dial(), nil },
	}}
	t.Cleanup(func() {
		_ = srv.Close()
		client.CloseIdleConnections()
	})
	return &api{t: t, url: "http://chat.test", client: client}
}

// closeCoordinator stops the watches and waits for the background starts.
// After it every StartPod that will ever happen has happened. Closing twice
// is harmless.
func (h *harness) closeCoordinator(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.coord.Close(ctx); err != nil {
		t.Errorf("coordinator close: %v", err)
	}
}

// startsInTheEnd closes the coordinator and returns how many starts were
// ever requested.
func (h *harness) startsInTheEnd(t *testing.T) int {
	t.Helper()
	h.closeCoordinator(t)
	return h.gpu.startCount()
}

// waitStart waits for the next StartPod call.
func (h *harness) waitStart(t *testing.T) {
	t.Helper()
	select {
	case <-h.gpu.started:
	case <-time.After(waitLimit):
		t.Fatalf("no StartPod within %v (starts so far: %d)", waitLimit, h.gpu.startCount())
	}
}

// wakeConfig is the harness's coordinator's configuration: no wake log,
// its hooks feeding waitOutcome and waitWatchEnd.
func (h *harness) wakeConfig() wake.Config {
	return wake.Config{
		Pod: h.policy, Records: h.store, GPU: h.gpu, Clock: h.clock, Logger: h.logger,
		WatchPoll: 60 * time.Second, StartTimeout: 3 * time.Second,
		Started: func(pod string) { notify(h.outcomes, pod) },
		Watched: func(_ string, wake time.Time) { notify(h.watchEnds, wake) },
	}
}

// notify sends v on ch without blocking: the hooks must not block, and a
// test that waits for none leaves the buffer to fill.
func notify[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// waitOutcome waits until the start a wake sent has its outcome fed to
// the machine and logged (wake.Config.Started).
func (h *harness) waitOutcome(t *testing.T) {
	t.Helper()
	await(t, h.outcomes, "start outcome")
}

// waitWatchEnd waits until a wake's watch has returned, its lines logged
// (wake.Config.Watched).
func (h *harness) waitWatchEnd(t *testing.T) {
	t.Helper()
	await(t, h.watchEnds, "end of a wake watch")
}

// await waits for a value on ch, failing the test after waitLimit.
func await[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("no %s within %v", what, waitLimit)
	}
}

// armed waits until n clock timers (wake watches) are pending.
func (h *harness) armed(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.clock.BlockUntilWaiters(ctx, n); err != nil {
		t.Fatalf("waiting for %d watch timer(s): %v (pending: %d)", n, err, h.clock.Waiters())
	}
}

// advance moves the clock by d while exactly one wake watch runs: it waits
// for the watch's timer, moves the clock, and waits until the watch has read
// the pod and armed its next timer, so no pod read is in flight afterwards.
func (h *harness) advance(t *testing.T, d time.Duration) {
	t.Helper()
	h.armed(t, 1)
	h.clock.Advance(d)
	h.armed(t, 1)
}

func (h *harness) history(t *testing.T, session string) []store.Message {
	t.Helper()
	// An answered turn stores itself after its reply: wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, cs := range h.servers {
		if err := cs.Wait(ctx, session); err != nil {
			t.Fatalf("waiting for session %s: %v", session, err)
		}
	}
	msgs, err := h.store.History(t.Context(), session, 100)
	if err != nil {
		t.Fatalf("History(%s): %v", session, err)
	}
	return msgs
}

// pending returns session's stored marker, nil when it has none.
func (h *harness) pending(t *testing.T, session string) *store.Pending {
	t.Helper()
	p, ok, err := h.store.Pending(t.Context(), session)
	if err != nil {
		t.Fatalf("Pending(%s): %v", session, err)
	}
	if !ok {
		return nil
	}
	return &p
}

// api is one served chat.Server.
type api struct {
	t      *testing.T
	url    string
	client *http.Client
}

// on returns a copy of a that reports to t (a subtest's).
func (a *api) on(t *testing.T) *api {
	c := *a
	c.t = t
	return &c
}

// response is an HTTP answer, read whole.
type response struct {
	Status int
	Header http.Header
	Body   string
}

func (a *api) do(method, path, contentType, body string) response {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: string(b)}
}

// chatReq is a POST /api/chat body; empty fields are left out.
type chatReq struct {
	Message     string `json:"message"`
	SessionID   string `json:"sessionId,omitempty"`
	WakeMode    string `json:"wakeMode,omitempty"`
	PendingWake any    `json:"pendingWake,omitempty"`
}

// chatReply is a 200 from /api/chat.
type chatReply struct {
	Reply       string       `json:"reply"`
	SessionID   string       `json:"sessionId"`
	PendingWake *pendingWake `json:"pendingWake"`
}

// pendingWake is the marker as clients see it.
type pendingWake struct {
	Key             string  `json:"key"`
	Pod             string  `json:"pod"`
	Provider        string  `json:"provider"`
	WakeRequestedAt *string `json:"wakeRequestedAt"`
	State           string  `json:"state"`
	Events          string  `json:"events"`
}

// post sends req to /api/chat.
func (a *api) post(req chatReq) response {
	a.t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		a.t.Fatal(err)
	}
	return a.do(http.MethodPost, "/api/chat", "application/json", string(b))
}

// turn sends req and decodes the 200 it must get, strictly.
func (a *api) turn(req chatReq) chatReply {
	a.t.Helper()
	res := a.post(req)
	if res.Status != http.StatusOK {
		a.t.Fatalf("POST /api/chat %+v: status %d, body %s; want 200", req, res.Status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		a.t.Errorf("Content-Type %q, want application/json", ct)
	}
	return decodeReply(a.t, res.Body)
}

// ask is a legacy turn (no wakeMode).
func (a *api) ask(session, message string) chatReply {
	a.t.Helper()
	return a.turn(chatReq{Message: message, SessionID: session})
}

// asyncResult is the answer to a request sent from another goroutine.
type asyncResult struct {
	Status int
	Body   string
	Err    error
}

// postAsync sends req from a goroutine of its own; it never touches the
// test's T, so its result is checked by the test goroutine.
func (a *api) postAsync(req chatReq) <-chan asyncResult {
	out := make(chan asyncResult, 1)
	go func() {
		b, _ := json.Marshal(req)
		res, err := a.client.Post(a.url+"/api/chat", "application/json", bytes.NewReader(b))
		if err != nil {
			out <- asyncResult{Err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		out <- asyncResult{Status: res.StatusCode, Body: string(body), Err: err}
	}()
	return out
}

// receive waits for an async result.
func receive(t *testing.T, ch <-chan asyncResult) asyncResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.Err != nil {
			t.Fatalf("request failed: %v", r.Err)
		}
		return r
	case <-time.After(waitLimit):
		t.Fatalf("no answer within %v", waitLimit)
		return asyncResult{}
	}
}

// decodeReply decodes a 200 body strictly.
func decodeReply(t *testing.T, body string) chatReply {
	t.Helper()
	var r chatReply
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return r
}
