package app_test

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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// t0 is the first live wake's first message: 2026-09-09 12:26:25 UTC.
var t0 = time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)

// The replies of the 2026-09-09 timeline, with the default wording and
// timings (expected_wake 9m).
const (
	replyWaking = "Waking the GPU brain — that takes about 9 minutes. Ask me again in a few minutes."
	// providerFailed is the generic 502 body, byte for byte (D5).
	providerFailed = `{"error":"the agent provider failed"}`
)

func replyStillWaking(minutes int) string {
	return fmt.Sprintf("Still waking — %d min elapsed, usually ready by ~9. Ask again shortly.", minutes)
}

func replyLoadingWaking(minutes int) string {
	return fmt.Sprintf("Still waking — %d min elapsed; the GPU is up and the model is loading. Ask again shortly.", minutes)
}

func replyRefused(status int) string {
	return fmt.Sprintf("The last wake request was refused by the conductor (HTTP %d). Waking it again — about 9 minutes.", status)
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

// logBuffer collects a host's JSON log lines. It is safe for concurrent
// use: the host writes while the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logLine is one parsed log record.
type logLine struct {
	Level string
	Msg   string
	Raw   string
	Attrs map[string]any
}

// lines parses every complete line. slog's JSON handler writes each record
// with one Write, so a line is never torn.
func (b *logBuffer) lines(t *testing.T) []logLine {
	t.Helper()
	var out []logLine
	for raw := range strings.Lines(b.String()) {
		raw = strings.TrimSuffix(raw, "\n")
		if raw == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, raw)
		}
		level, _ := m["level"].(string)
		msg, _ := m["msg"].(string)
		out = append(out, logLine{Level: level, Msg: msg, Raw: raw, Attrs: m})
	}
	return out
}

// matching returns the lines whose message starts with prefix.
func (b *logBuffer) matching(t *testing.T, prefix string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range b.lines(t) {
		if strings.HasPrefix(l.Msg, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// checkUniqueKeys fails the test for every log line whose top-level keys
// repeat (say, a plugin attribute added by two layers of loggers): log
// pipelines keep one of the two, or reject the line.
func (b *logBuffer) checkUniqueKeys(t *testing.T) {
	t.Helper()
	for _, l := range b.lines(t) {
		dec := json.NewDecoder(strings.NewReader(l.Raw))
		dec.Token() // the '{': lines already parsed as objects
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("log line: %v\n%s", err, l.Raw)
			}
			key, _ := tok.(string)
			if seen[key] {
				t.Errorf("log line repeats the key %q: %s", key, l.Raw)
			}
			seen[key] = true
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("log line: %v\n%s", err, l.Raw)
			}
		}
	}
}

// waitLine polls the log every 10 ms until n lines start with prefix, and
// returns the n-th. It fails the test after waitFor.
func (b *logBuffer) waitLine(t *testing.T, prefix string, n int) logLine {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if got := b.matching(t, prefix); len(got) >= n {
			return got[n-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d log line(s) starting %q after %v; the log:\n%s", n, prefix, waitFor, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hostOptions say how to run one in-process host.
type hostOptions struct {
	// simulate runs app's built-in simulator on the fake clock. Without it,
	// conductorURL must point at a conductor (a simulator the test runs).
	simulate     bool
	conductorURL string
	// dataDir is [server] data_dir; default a fresh temp dir. Under simulate
	// the app uses a temp dir of its own.
	dataDir string
	// apiKeyEnv is the provider's api_key_env ("" for none).
	apiKeyEnv string
	// env is what Options.Getenv returns; nothing else is read from the
	// process environment.
	env map[string]string
	// clock is shared with the simulator; required.
	clock *clock.Fake
	// level is the lowest log level kept. Zero (slog.LevelInfo) means
	// debug: no test wants fewer lines.
	level slog.Level
}

// testHost is a running app.App and what the test sees of it.
type testHost struct {
	app    *app.App
	clock  *clock.Fake
	log    *logBuffer
	base   string // http://addr
	client *http.Client

	mu     sync.Mutex
	bodies []string // every response body the host gave, for the secret checks

	stopOnce sync.Once
	stopErr  error
	served   chan error
}

// writeConfig writes a small wake.toml into a fresh temp dir and returns its
// path.
func writeConfig(t *testing.T, o hostOptions) string {
	t.Helper()
	dir := t.TempDir()
	dataDir := o.dataDir
	if dataDir == "" {
		dataDir = filepath.Join(dir, "data")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[server]\nlisten = %s\ndata_dir = %s\n\n", strconv.Quote("127.0.0.1:0"), strconv.Quote(dataDir))
	fmt.Fprintf(&b, "[conductor]\nstart_timeout = %s\n", strconv.Quote(startTimeout.String()))
	if o.conductorURL != "" {
		fmt.Fprintf(&b, "url = %s\n", strconv.Quote(o.conductorURL))
	}
	fmt.Fprintf(&b, "\n[[providers]]\nname = \"qwen\"\npod = \"qwen\"\nmodel = \"qwen\"\napi_key_env = %s\n", strconv.Quote(o.apiKeyEnv))
	path := filepath.Join(dir, "wake.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startHost runs app.New and Serve with o, and stops the host at cleanup.
func startHost(t *testing.T, o hostOptions) *testHost {
	t.Helper()
	if o.clock == nil {
		t.Fatal("startHost: hostOptions.clock is required")
	}
	if o.level == 0 {
		o.level = slog.LevelDebug
	}
	logs := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: o.level}))
	env := o.env
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := app.New(ctx, app.Options{
		ConfigPath: writeConfig(t, o),
		Simulate:   o.simulate,
		Logger:     logger,
		Getenv:     func(k string) string { return env[k] },
		Clock:      o.clock,
		PluginDir:  binDir,
	})
	if err != nil {
		t.Fatalf("app.New: %v\nthe log:\n%s", err, logs.String())
	}
	h := &testHost{
		app:    a,
		clock:  o.clock,
		log:    logs,
		base:   "http://" + a.Addr(),
		client: &http.Client{Timeout: 10 * time.Second},
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

// stop shuts the host down once and reports Shutdown's and Serve's errors.
func (h *testHost) stop() error {
	h.stopOnce.Do(func() {
		// A connection the client dialled but never used counts as busy for
		// 5 s in http.Server.Shutdown: close them first.
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

// sim is the app's built-in simulator.
func (h *testHost) sim(t *testing.T) *sim.Sim {
	t.Helper()
	s := h.app.Simulator()
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
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	h.mu.Lock()
	h.bodies = append(h.bodies, string(b))
	h.mu.Unlock()
	return resp.StatusCode, string(b), nil
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

// waitWatcher waits until a goroutine (the wake's watch) waits on the fake
// clock.
func waitWatcher(t *testing.T, c *clock.Fake) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("at %s nothing waits on the clock after %v: is the wake's watch running?", c.Now().Format(time.TimeOnly), waitFor)
	}
}

// stepTo moves the fake clock to target in steps of at most step, each
// taken once the wake's watch waits on the clock, so that the watch reads
// the pod at every step as it would in real time.
func stepTo(t *testing.T, c *clock.Fake, target time.Time, step time.Duration) {
	t.Helper()
	for now := c.Now(); now.Before(target); now = c.Now() {
		waitWatcher(t, c)
		c.Advance(min(step, target.Sub(now)))
	}
}

// stepUntilLine advances the fake clock by step each time the wake's watch
// waits on it, until a log line starts with prefix; it returns that line.
func stepUntilLine(t *testing.T, c *clock.Fake, logs *logBuffer, prefix string, step time.Duration) logLine {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if got := logs.matching(t, prefix); len(got) > 0 {
			return got[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line starting %q after %v (clock at %s); the log:\n%s",
				prefix, waitFor, c.Now().Format(time.TimeOnly), logs.String())
		}
		if c.Waiters() > 0 {
			c.Advance(step)
			continue
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCount polls get every 10 ms until it returns want, and fails the test
// after waitFor.
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
		time.Sleep(10 * time.Millisecond)
	}
}

// hasURL reports whether s carries anything that looks like a URL.
func hasURL(s string) bool { return strings.Contains(s, "http") || strings.Contains(s, "://") }
