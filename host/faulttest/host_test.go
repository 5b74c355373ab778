package faulttest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/supervisor"
)

// The secrets every host gets from its Getenv. Neither may appear in a log
// line or a response body.
const (
	secretToken = "tok-SECRET" // RIG_WAKE_TOKEN
	secretKey   = "key-SECRET" // the provider's API key
	keyEnv      = "QWEN_API_KEY"
)

// The timeouts of every row's wake.toml: short, so that the rows of a
// conductor, plugin or model that hangs end quickly. A row whose turns are
// slow for their size rather than for a fault sets its own completion
// timeout (row.completionTimeout).
const (
	lookupTimeout     = 300 * time.Millisecond
	startTimeout      = 300 * time.Millisecond
	completionTimeout = 500 * time.Millisecond
)

// t0 is the fake clock's start: the first live wake, 2026-09-09 12:26:25 UTC.
var t0 = time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)

// waitFor bounds every wait on something asynchronous, in real time.
const waitFor = 5 * time.Second

// env is one row's world: the scripted conductor and model, the fake clock,
// the data dir every host of the row shares, and everything the hosts said.
type env struct {
	clock   *fakeclock.Clock
	cond    *server
	model   *server
	dataDir string
	log     *e2e.Log

	// pluginDir is the hosts' plugin dir: hard links to binDir's binaries
	// in a directory of the row's own (linkBinaries), so that the row's
	// plugin processes are told from the other rows' by their executable.
	pluginDir string
	// gpuPlugin and providerPlugin name the plugin binaries in pluginDir.
	gpuPlugin, providerPlugin string
	// completionTimeout is the hosts' [agent] completion timeout.
	completionTimeout time.Duration

	bodies e2e.Bodies // every response body any host of the row gave
	// atEnd are the checks of the log a row runs once every host stopped
	// (whenStopped): of lines logged in the background, after the change a
	// test could see.
	atEnd []func(t *testing.T)
}

// whenStopped has the row run check once every host of the row has
// stopped, when the log is whole: a background start's or watch's line is
// logged after what it reports, so nothing the test sees orders it before.
func (e *env) whenStopped(check func(t *testing.T)) { e.atEnd = append(e.atEnd, check) }

// expectLine has the row check w once every host has stopped.
func (e *env) expectLine(w wantLine) {
	e.whenStopped(func(t *testing.T) { t.Helper(); checkLine(t, e, w) })
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{
		clock:             fakeclock.New(t0),
		cond:              newServer(t),
		model:             newServer(t),
		dataDir:           filepath.Join(t.TempDir(), "data"),
		pluginDir:         linkBinaries(t),
		log:               &e2e.Log{},
		gpuPlugin:         e2e.ConductorBin,
		providerPlugin:    e2e.ProviderBin,
		completionTimeout: completionTimeout,
	}
}

// healthy scripts a working pod: RUNNING behind the model, which answers;
// a conductor that was down is up again.
func (e *env) healthy() {
	e.cond.up()
	e.cond.on(routeGetPod, running(e.model, t0))
	e.cond.on(routeStart, status(http.StatusAccepted, "application/json", `{}`))
	e.model.on(routeComplete, answer())
}

// options are app.New's options for the row: its wake.toml, a log at
// trace level, the secrets in the environment and the fake clock.
func (e *env) options(t *testing.T) app.Options {
	t.Helper()
	return app.Options{
		ConfigPath: e2e.WriteConfig(t, e2e.Config{
			DataDir:           e.dataDir,
			ConductorPlugin:   e.gpuPlugin,
			ConductorURL:      e.cond.url,
			LookupTimeout:     lookupTimeout,
			StartTimeout:      startTimeout,
			CompletionTimeout: e.completionTimeout,
			ProviderPlugin:    e.providerPlugin,
			APIKeyEnv:         keyEnv,
		}),
		Logger:    e.log.Logger(supervisor.LevelTrace),
		Getenv:    getenv,
		Clock:     e.clock,
		PluginDir: e.pluginDir,
	}
}

// linkBinaries makes a directory of t's own holding a hard link to each of
// binDir's binaries, and returns it.
func linkBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range builtBins {
		if err := os.Link(filepath.Join(binDir, name), filepath.Join(dir, name)); err != nil {
			t.Fatalf("linking the plugin binaries into the row's plugin dir: %v", err)
		}
	}
	return dir
}

// pluginPID is the one running plugin process of the row's hosts started
// from the binary name; none, or more than one, fails the row.
func (e *env) pluginPID(t *testing.T, name string) int {
	t.Helper()
	pids := e.pluginPIDs(name)
	if len(pids) != 1 {
		t.Fatalf("%d processes of %s, want 1; the test's children: %v", len(pids), filepath.Join(e.pluginDir, name), e2e.ChildExecutables(os.Getpid()))
	}
	return pids[0]
}

// pluginPIDs are the running plugin processes of the row's hosts started
// from any of the binaries names. The hosts run in the test's process, so
// their plugins are the test's children.
func (e *env) pluginPIDs(names ...string) []int {
	var pids []int
	for pid, exe := range e2e.ChildExecutables(os.Getpid()) {
		for _, name := range names {
			if exe == filepath.Join(e.pluginDir, name) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// getenv is every host's environment: the wake token and the API key.
func getenv(k string) string {
	return map[string]string{"RIG_WAKE_TOKEN": secretToken, keyEnv: secretKey}[k]
}

// host is one running app.App of the row.
type host struct {
	*e2e.Host
	e *env
}

// start runs app.New and Serve; the host is stopped at cleanup if the row
// has not stopped it.
func (e *env) start(t *testing.T) *host {
	t.Helper()
	return &host{Host: e2e.Start(t, e.options(t), e.log, &e.bodies), e: e}
}

// chatRequest is a POST /api/chat body.
type chatRequest struct {
	Message   string `json:"message"`
	SessionID string `json:"sessionId"`
}

// chat posts a legacy turn of session and returns the answer; a transport
// error fails the row.
func (h *host) chat(t *testing.T, session, msg string) e2e.Response {
	t.Helper()
	tr, err := h.Send(http.MethodPost, "/api/chat", chatRequest{Message: msg, SessionID: session}, 10*time.Second)
	if err != nil {
		t.Fatalf("POST /api/chat %q: %v", msg, err)
	}
	return tr
}

// replyBody is the exact body of a 200 from /api/chat.
func replyBody(session, reply string) string {
	b, _ := json.Marshal(struct {
		Reply     string `json:"reply"`
		SessionID string `json:"sessionId"`
	}{reply, session})
	return string(b) + "\n"
}

// awaitState reads the pod's event stream (GET /api/pods/qwen/events, whose
// first event is the pod as it is now) until it says the pod is in state:
// an outcome the host recorded in the background, pushed, not polled.
// Nothing within waitFor fails the row.
func (h *host) awaitState(t *testing.T, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Base+"/api/pods/qwen/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("GET /api/pods/qwen/events: %v", err)
	}
	defer resp.Body.Close()
	var seen []string
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err == nil && ev.State == state {
			return
		}
		seen = append(seen, data)
	}
	t.Fatalf("the pod's event stream did not say %s within %v; it said %q", state, waitFor, seen)
}
