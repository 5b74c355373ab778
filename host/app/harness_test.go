package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// t0 is the first live wake's first message: 2026-09-09 12:26:25 UTC.
var t0 = time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)

func replyLoadingWaking(minutes int) string {
	return fmt.Sprintf("Still waking — %d min elapsed; the GPU is up and the model is loading. Ask again shortly.", minutes)
}

// The operator log lines of a wake (#684, D12), as prefixes.
const (
	lineInFlight = "wake requested for pod qwen: in flight (client timed out after 0.2 s; the conductor continues)"
	lineReady    = "wake ready for pod qwen"
)

// startTimeout is [conductor] start_timeout in every test config: a held
// start (the simulator holds it until RUNNING, like the real conductor) is
// reported in flight after this much real time.
const startTimeout = 200 * time.Millisecond

// waitFor bounds every wait on something asynchronous (a log line, a
// counter) in real time.
const waitFor = 5 * time.Second

// hostOptions say how to run one in-process host.
type hostOptions struct {
	// simulate runs app's built-in simulator on the fake clock. Without it,
	// conductorURL must point at a conductor (a simulator the test runs).
	simulate     bool
	conductorURL string
	// dataDir is [server] data_dir; default a fresh temp dir. Under simulate
	// the app uses a temp dir of its own.
	dataDir string
	// adminListen is [server] admin_listen ("" for none).
	adminListen string
	// eventsKeepalive is [server] events_keepalive (0 for the default).
	eventsKeepalive time.Duration
	// apiKeyEnv is the provider's api_key_env ("" for none).
	apiKeyEnv string
	// postgres, when set, is the connection string of a PostgreSQL store
	// ([store] backend = "postgres"), in the variable WAKE_TEST_STORE_DSN.
	postgres string
	// sessionHistoryBytes and historyBytes are [store]
	// session_history_bytes and [agent] history_bytes (0: the defaults).
	sessionHistoryBytes, historyBytes int
	// env is what Options.Getenv returns; nothing else is read from the
	// process environment.
	env map[string]string
	// clock is shared with the simulator; required.
	clock *fakeclock.Clock
	// level is the lowest log level kept. Zero (slog.LevelInfo) means
	// debug: no test wants fewer lines.
	level slog.Level
	// statusRefresh is Options.StatusRefresh (0: the page's default).
	statusRefresh time.Duration
}

// testHost is a running app.App and what the test sees of it.
type testHost struct {
	*e2e.Host
	clock *fakeclock.Clock
	log   *e2e.Log
}

// writeConfig writes a small wake.toml into a fresh temp dir and returns its
// path.
func writeConfig(t testing.TB, o hostOptions) string {
	t.Helper()
	return e2e.WriteConfig(t, e2e.Config{
		DataDir:         o.dataDir,
		AdminListen:     o.adminListen,
		EventsKeepalive: o.eventsKeepalive,
		ConductorURL:    o.conductorURL,
		StartTimeout:    startTimeout,
		APIKeyEnv:       o.apiKeyEnv,
		StoreDSNEnv:     storeDSNEnv(o.postgres),

		SessionHistoryBytes: o.sessionHistoryBytes,
		HistoryBytes:        o.historyBytes,
	})
}

// storeDSNEnv is the variable a test host reads its PostgreSQL connection
// string from, when it has one.
func storeDSNEnv(dsn string) string {
	if dsn == "" {
		return ""
	}
	return "WAKE_TEST_STORE_DSN"
}

// startHost runs app.New and Serve with o, and stops the host at cleanup.
func startHost(t testing.TB, o hostOptions) *testHost {
	t.Helper()
	if o.clock == nil {
		t.Fatal("startHost: hostOptions.clock is required")
	}
	if o.level == 0 {
		o.level = slog.LevelDebug
	}
	logs := &e2e.Log{}
	env := o.env
	if o.postgres != "" {
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env[storeDSNEnv(o.postgres)] = o.postgres
	}
	h := e2e.Start(t, app.Options{
		ConfigPath: writeConfig(t, o),
		Simulate:   o.simulate,
		Logger:     logs.Logger(o.level),
		Getenv:     func(k string) string { return env[k] },
		Clock:      o.clock,
		PluginDir:  binDir,

		StatusRefresh: o.statusRefresh,
	}, logs, nil)
	return &testHost{Host: h, clock: o.clock, log: logs}
}

// sim is the app's built-in simulator.
// serveSim serves h, the simulator s or a handler in front of it, as the
// conductor and the model, and returns its URL. At cleanup s is closed
// first: that releases the starts it holds, which the server's Close waits
// for.
func serveSim(t *testing.T, s *sim.Sim, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { s.Close() })
	return srv.URL
}

func (h *testHost) sim(t *testing.T) *sim.Sim {
	t.Helper()
	s := h.App.Simulator()
	if s == nil {
		t.Fatal("the host runs no simulator")
	}
	return s
}

// pendingWake is the marker a wakeMode "wait" turn returns.
type pendingWake struct {
	Key             string     `json:"key"`
	Pod             string     `json:"pod"`
	Provider        string     `json:"provider"`
	WakeRequestedAt *time.Time `json:"wakeRequestedAt"`
	State           string     `json:"state"`
	Events          string     `json:"events"`
}

// chatReply is a POST /api/chat answer.
type chatReply struct {
	Reply       string       `json:"reply"`
	SessionID   string       `json:"sessionId"`
	PendingWake *pendingWake `json:"pendingWake"`
	Error       string       `json:"error"`
}

// chatRequest is a POST /api/chat body.
type chatRequest struct {
	Message     string `json:"message"`
	SessionID   string `json:"sessionId,omitempty"`
	WakeMode    string `json:"wakeMode,omitempty"`
	PendingWake string `json:"pendingWake,omitempty"`
}

// requestTimeout is the client's patience with one request.
const requestTimeout = 10 * time.Second

// do sends one request and returns the status and body; it fails the test
// on a transport error. It is safe to call from several goroutines, but
// then it must not be given t (Fatal is for the test's goroutine): use
// send.
func (h *testHost) do(t *testing.T, method, path string, body any) (int, string) {
	t.Helper()
	status, raw, err := h.send(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return status, raw
}

func (h *testHost) send(method, path string, body any) (int, string, error) {
	r, err := h.Send(method, path, body, requestTimeout)
	return r.Status, r.Body, err
}

// chat posts req and decodes the answer, whatever its status.
func (h *testHost) chat(t *testing.T, req chatRequest) (int, chatReply, string) {
	t.Helper()
	status, raw := h.do(t, http.MethodPost, "/api/chat", req)
	var r chatReply
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("POST /api/chat %+v: %d with a body that is not JSON: %v\n%s", req, status, err, raw)
	}
	return status, r, raw
}

// ask is a legacy turn that must answer 200; it returns the reply.
func (h *testHost) ask(t *testing.T, session, message string) string {
	t.Helper()
	status, r, raw := h.chat(t, chatRequest{Message: message, SessionID: session})
	if status != http.StatusOK {
		t.Fatalf("ask %q at %s: status %d, want 200; body %s", message, h.clock.Now().Format(time.TimeOnly), status, raw)
	}
	if r.SessionID != session {
		t.Errorf("ask %q: sessionId %q, want %q", message, r.SessionID, session)
	}
	return r.Reply
}

// podReport is GET /api/pods/{name}.
type podReport struct {
	Pod             string     `json:"pod"`
	Status          string     `json:"status"`
	IsRunning       bool       `json:"isRunning"`
	ReadySince      *string    `json:"readySince"`
	Lookup          string     `json:"lookup"`
	FromCache       bool       `json:"fromCache"`
	State           string     `json:"state"`
	WakeRequestedAt *time.Time `json:"wakeRequestedAt"`
	Outcome         *string    `json:"outcome"`
	Ready           bool       `json:"ready"`
}

// pod reads GET /api/pods/qwen, which must answer 200.
func (h *testHost) pod(t *testing.T) (podReport, string) {
	t.Helper()
	status, raw := h.do(t, http.MethodGet, "/api/pods/qwen", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /api/pods/qwen: status %d, want 200; body %s", status, raw)
	}
	var p podReport
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatalf("GET /api/pods/qwen: %v\n%s", err, raw)
	}
	return p, raw
}

// stepTo moves the fake clock to target in steps of at most step, each
// taken once the wake's watch waits on the clock, so that the watch reads
// the pod at every step as it would in real time.
func stepTo(t *testing.T, c *fakeclock.Clock, target time.Time, step time.Duration) {
	t.Helper()
	for now := c.Now(); now.Before(target); now = c.Now() {
		e2e.WaitWatcher(t, c, waitFor)
		c.Advance(min(step, target.Sub(now)))
	}
}

// waitState waits until GET /api/pods/qwen/events pushes the pod in state
// (its first event is the pod as it is now) and returns that event. The
// stream is the hub's: opening it reads nothing from the conductor.
func (h *testHost) waitState(t *testing.T, state string) podEvent {
	t.Helper()
	return h.waitPodState(t, "qwen", state)
}

// waitPodState is waitState for pod.
func (h *testHost) waitPodState(t *testing.T, pod, state string) podEvent {
	t.Helper()
	es := h.openEvents(t, "/api/pods/"+pod+"/events")
	defer es.close()
	for {
		if e := es.nextPod(t); e.State == state {
			return e
		}
	}
}

// stepUntilState advances the fake clock by step each time the wake's
// watch waits on it, until the pod's event stream pushes the pod in state;
// it returns that event. Each step, and the event after the last, must
// come within waitFor.
func (h *testHost) stepUntilState(t *testing.T, state string, step time.Duration) podEvent {
	t.Helper()
	return h.stepUntilPodState(t, "qwen", state, step)
}

// stepUntilPodState is stepUntilState for pod.
func (h *testHost) stepUntilPodState(t *testing.T, pod, state string, step time.Duration) podEvent {
	t.Helper()
	es := h.openEvents(t, "/api/pods/"+pod+"/events")
	defer es.close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		waiting := make(chan error, 1)
		go func() { waiting <- h.clock.BlockUntilWaiters(ctx, 1) }()
		select {
		case e, ok := <-es.events:
			cancel()
			<-waiting
			if !ok {
				t.Fatalf("the event stream ended before the pod was %s (clock at %s)", state, h.clock.Now().Format(time.TimeOnly))
			}
			if p := decodePodEvent(t, e); p.State == state {
				return p
			}
		case err := <-waiting:
			cancel()
			if err != nil {
				t.Fatalf("the pod is not %s and nothing waits on the fake clock after %v (clock at %s)", state, waitFor, h.clock.Now().Format(time.TimeOnly))
			}
			h.clock.Advance(step)
		}
	}
}

// stop shuts the host down and fails the test if that fails. Once it
// returned, every wake's start and watch has returned too, so the log is
// whole: the place to check a line that is logged after the change it
// reports.
func (h *testHost) stop(t *testing.T) {
	t.Helper()
	if err := h.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// logged is the first log line starting with prefix, which must be there
// already: the log as it is now, nothing waited for. Call it after the
// event that follows the line.
func (h *testHost) logged(t *testing.T, prefix string) e2e.Line {
	t.Helper()
	got := h.log.Matching(t, prefix)
	if len(got) == 0 {
		t.Fatalf("no log line starts %q; the log:\n%s", prefix, h.log)
	}
	return got[0]
}

// hasURL reports whether s carries anything that looks like a URL.
func hasURL(s string) bool { return strings.Contains(s, "http") || strings.Contains(s, "://") }

// concurrently runs each of fs on a goroutine of its own and returns once
// they all have. Each gets a testing.TB on t whose Fatal, FailNow and Skip
// fail t and end only that goroutine (testing's own must be called from the
// test's goroutine); once they have all returned, a failure among them
// ends the test. For helpers that wait on something slow and independent,
// such as the start of several hosts.
func concurrently(t *testing.T, fs ...func(t testing.TB)) {
	t.Helper()
	var failed atomic.Bool
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(func() { f(goroutineTB{TB: t, failed: &failed}) })
	}
	wg.Wait()
	if failed.Load() {
		t.FailNow()
	}
}

// goroutineTB is a testing.TB for a goroutine of concurrently's.
type goroutineTB struct {
	testing.TB
	failed *atomic.Bool
}

func (g goroutineTB) FailNow() {
	g.failed.Store(true)
	g.TB.Fail()
	runtime.Goexit()
}

func (g goroutineTB) Fatal(args ...any) {
	g.TB.Helper()
	g.TB.Error(args...)
	g.FailNow()
}

func (g goroutineTB) Fatalf(format string, args ...any) {
	g.TB.Helper()
	g.TB.Errorf(format, args...)
	g.FailNow()
}

// A skip on such a goroutine cannot skip the test: it fails it, saying so.
func (g goroutineTB) SkipNow() { g.Fatal("a skip on a goroutine of concurrently") }
func (g goroutineTB) Skip(args ...any) {
	g.TB.Helper()
	g.Fatal(append([]any{"skip on a goroutine of concurrently:"}, args...)...)
}
func (g goroutineTB) Skipf(format string, args ...any) {
	g.TB.Helper()
	g.Fatalf("skip on a goroutine of concurrently: "+format, args...)
}
