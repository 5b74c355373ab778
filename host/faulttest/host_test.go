package faulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/supervisor"
)

// The secrets every host gets from its Getenv. Neither may appear in a log
// line or a response body.
const (
	secretToken = "tok-SECRET" // RIG_WAKE_TOKEN
	secretKey   = "key-SECRET" // the provider's API key
	keyEnv      = "QWEN_API_KEY"
)

// The timeouts of every row's wake.toml.
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
	clock   *clock.Fake
	cond    *server
	model   *server
	dataDir string
	log     *logBuffer

	// gpuPlugin and providerPlugin name the plugin binaries in binDir.
	gpuPlugin, providerPlugin string

	mu     sync.Mutex
	bodies []string // every response body any host of the row gave
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{
		clock:          clock.NewFake(t0),
		cond:           newServer(t),
		model:          newServer(t),
		dataDir:        filepath.Join(t.TempDir(), "data"),
		log:            &logBuffer{},
		gpuPlugin:      conductorBin,
		providerPlugin: providerBin,
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

// writeConfig writes the row's wake.toml into a fresh temp dir.
func (e *env) writeConfig(t *testing.T) string {
	t.Helper()
	q := strconv.Quote
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %s

[conductor]
plugin = %s
url = %s
lookup_timeout = %s
start_timeout = %s

[timings]
completion_timeout = %s

[[providers]]
name = "qwen"
plugin = %s
pod = "qwen"
model = "qwen"
api_key_env = %s
`, q(e.dataDir), q(e.gpuPlugin), q(e.cond.url), q(lookupTimeout.String()), q(startTimeout.String()),
		q(completionTimeout.String()), q(e.providerPlugin), q(keyEnv))
	path := filepath.Join(t.TempDir(), "wake.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// getenv is every host's environment: the wake token and the API key.
func getenv(k string) string {
	return map[string]string{"RIG_WAKE_TOKEN": secretToken, keyEnv: secretKey}[k]
}

// newApp runs app.New for the row and turns a panic into a value.
func (e *env) newApp(t *testing.T) (a *app.App, err error, panicked any) {
	t.Helper()
	defer func() { panicked = recover() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err = app.New(ctx, app.Options{
		ConfigPath: e.writeConfig(t),
		Logger:     slog.New(slog.NewJSONHandler(e.log, &slog.HandlerOptions{Level: supervisor.LevelTrace})),
		Getenv:     getenv,
		Clock:      e.clock,
		PluginDir:  binDir,
	})
	return a, err, nil
}

// host is one running app.App.
type host struct {
	e      *env
	app    *app.App
	base   string
	client *http.Client
	served chan error

	stopOnce sync.Once
	stopErr  error
}

// start runs app.New and Serve; the host is stopped at cleanup if the row
// has not stopped it.
func (e *env) start(t *testing.T) *host {
	t.Helper()
	a, err, panicked := e.newApp(t)
	if panicked != nil || err != nil {
		t.Fatalf("app.New: error %v, panic %v\nthe log:\n%s", err, panicked, e.log)
	}
	h := &host{
		e: e, app: a, base: "http://" + a.Addr(),
		// A transport of its own, so that closing its idle connections
		// leaves no connection goroutine behind.
		client: &http.Client{Transport: &http.Transport{}},
		served: make(chan error, 1),
	}
	go func() { h.served <- a.Serve() }()
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return h
}

// stop shuts the host down once and returns Shutdown's and Serve's errors.
func (h *host) stop() error {
	h.stopOnce.Do(func() {
		h.client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.stopErr = h.app.Shutdown(ctx)
		if err := <-h.served; err != nil && h.stopErr == nil {
			h.stopErr = fmt.Errorf("Serve: %w", err)
		}
	})
	return h.stopErr
}

// turn is one answered request.
type turn struct {
	status int
	body   string
	took   time.Duration
}

// send makes one request within timeout and records the body.
func (h *host) send(method, path string, body any, timeout time.Duration) (turn, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return turn{}, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, rd)
	if err != nil {
		return turn{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	began := time.Now()
	resp, err := h.client.Do(req)
	if err != nil {
		return turn{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return turn{}, err
	}
	h.e.mu.Lock()
	h.e.bodies = append(h.e.bodies, string(b))
	h.e.mu.Unlock()
	return turn{status: resp.StatusCode, body: string(b), took: time.Since(began)}, nil
}

// chatRequest is a POST /api/chat body.
type chatRequest struct {
	Message   string `json:"message"`
	SessionID string `json:"sessionId"`
}

// chat posts a legacy turn of session and returns the answer; a transport
// error fails the row.
func (h *host) chat(t *testing.T, session, msg string) turn {
	t.Helper()
	tr, err := h.send(http.MethodPost, "/api/chat", chatRequest{Message: msg, SessionID: session}, 10*time.Second)
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

// providerFailed is the exact body of every 502 (D5).
const providerFailed = `{"error":"the agent provider failed"}`

// waitWatcher waits until a goroutine (a wake's watch) sleeps on the fake
// clock.
func (e *env) waitWatcher(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := e.clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("nothing waits on the fake clock after %v: no wake watch is running", waitFor)
	}
}

// waitCount polls get until it returns want; more than want, or nothing
// after waitFor, fails the row.
func waitCount(t *testing.T, what string, want int, get func() int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		got := get()
		if got == want {
			return
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("%s = %d, want %d", what, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
