package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// The status page on the main listener, end to end: the real host, its
// plugins and the simulator on a fake clock.

// page fetches a status page path, which must answer 200 HTML.
func (h *testHost) page(t *testing.T, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET %s: %d %q, want 200 HTML\n%s", path, r.StatusCode, r.Header.Get("Content-Type"), b)
	}
	return string(b)
}

// The page is GET / exactly: every other path the API does not serve keeps
// its JSON 404, and the page follows a wake from asleep to ready with the
// machine's state and replies, then charts the wake.
func TestStatusPage(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})

	for _, tt := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/index.html", 404, `{"error":"no such endpoint: GET /index.html; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}`},
		{"GET", "/api/nothing", 404, `{"error":"no such endpoint: GET /api/nothing; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}`},
		{"GET", "/status", 404, `{"error":"no such endpoint: GET /status; the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"}`},
		{"GET", "/status/nothing", 404, `{"error":"no such endpoint: GET /status/nothing; the status page is GET / with its parts under /status/"}`},
		{"POST", "/", 405, `{"error":"method POST not allowed; use GET"}`},
		{"GET", "/status/pods/llama", 404, `{"error":"no such pod on this page"}`},
	} {
		status, raw := h.do(t, tt.method, tt.path, nil)
		if status != tt.status || strings.TrimSpace(raw) != tt.body {
			t.Errorf("%s %s: %d %s, want %d %s", tt.method, tt.path, status, raw, tt.status, tt.body)
		}
	}

	page := h.page(t, "/")
	for _, want := range []string{
		`data-fragment="/status/pods/qwen" data-events="/api/pods/qwen/events"`,
		`data-state="asleep"`,
		`<blockquote data-reply="waking">` + e2e.ReplyWaking + `</blockquote>`,
		`<tr data-plugin="wake-plugin-conductor"><td>wake-plugin-conductor</td><td>conductor</td><td class="ok">running</td>`,
		`<tr data-plugin="wake-plugin-provider-openai"><td>wake-plugin-provider-openai</td><td>provider qwen</td><td class="ok">running</td>`,
		`No wake logged yet.`,
		`data-clock-rate="0"`, // a fake clock: the page does not tick
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s\n%s", want, page)
		}
	}
	for _, asset := range []string{"/status/static/status.js", "/status/static/status.css"} {
		if status, _ := h.do(t, http.MethodGet, asset, nil); status != http.StatusOK {
			t.Errorf("GET %s: %d", asset, status)
		}
	}

	if got := h.ask(t, "s1", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q", got)
	}
	e2e.WaitWatcher(t, clk, waitFor) // the start returned; the watch runs
	frag := h.page(t, "/status/pods/qwen")
	for _, want := range []string{`data-state="waking"`, `<b>requested</b> 12:26:25 UTC`, `<b>running</b> <span class="meta">not yet</span>`, `~12:35:25 UTC`} {
		if !strings.Contains(frag, want) {
			t.Errorf("waking: the fragment lacks %s\n%s", want, frag)
		}
	}
	// RUNNING from 6m30s: the watch sees it at 7m.
	stepTo(t, clk, t0.Add(7*time.Minute), time.Minute)
	waitFragment(t, h, `data-state="loading"`)
	frag = h.page(t, "/status/pods/qwen")
	for _, want := range []string{`<b>running</b> 12:33:25 UTC <span class="meta">booted in 7 min</span>`,
		`<blockquote data-reply="loading_waking">` + replyLoadingWaking(7) + `</blockquote>`} {
		if !strings.Contains(frag, want) {
			t.Errorf("loading: the fragment lacks %s\n%s", want, frag)
		}
	}
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	waitFragment(t, h, `data-state="ready"`)
	if got := h.ask(t, "s1", "hello again"); got != "echo: hello again" {
		t.Fatalf("ask once ready: %q", got)
	}
	frag = waitFragment(t, h, `<td>yes</td></tr>`) // the wake served a turn
	for _, want := range []string{`<p>Goes to the model, which answers it.</p>`, `<td class="when">12:26:25 UTC</td><td class="ok">ready</td><td class="num">7 min</td><td class="num">2 min</td><td>yes</td>`,
		`A wake takes 9 min (the one measured wake).`, `<circle class="served"`} {
		if !strings.Contains(frag, want) {
			t.Errorf("ready: the fragment lacks %s\n%s", want, frag)
		}
	}
	if strings.Contains(frag, `class="wake"`) {
		t.Errorf("ready: the fragment still shows a wake in progress\n%s", frag)
	}
}

// waitFragment fetches qwen's fragment until it holds want (a change the
// hub publishes after the watch's read), within waitFor; it returns it.
func waitFragment(t *testing.T, h *testHost, want string) string {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		frag := h.page(t, "/status/pods/qwen")
		if strings.Contains(frag, want) {
			return frag
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fragment did not come to hold %s within %v\n%s", want, waitFor, frag)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The page shows no secret, no URL and no message: a host whose config is
// full of them (the wake token, API keys, the door's keys, a conductor URL
// with a path of its own, a literal provider URL, a system prompt) runs a
// wake and answers a turn, and nothing of it is on the page, its fragments
// or its assets.
func TestStatusPageKeepsSecrets(t *testing.T) {
	t.Parallel()
	const (
		conductorPath = "/rig-internal-7f3a"
		backupURL     = "https://llm-backup.internal.example/v1"
		backupKey     = "backup-SECRET-654"
		doorKey       = "door-SECRET-987"
		systemPrompt  = "You are the assistant of project nightjar-SECRET-PROMPT."
		question      = "what is the launch code private-question-42"
	)
	clk := fakeclock.New(t0)
	s := sim.New(sim.Config{Pods: []string{"qwen"}, Clock: clk})
	// The conductor under a path of its own; the model's proxy, which the
	// simulator names by the request's host, where the simulator puts it.
	mux := http.NewServeMux()
	mux.Handle(conductorPath+"/", http.StripPrefix(conductorPath, s.Handler()))
	mux.Handle("/", s.Handler())
	simURL := serveSim(t, s, mux)

	dir := t.TempDir()
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q

[conductor]
url = %q
start_timeout = "200ms"

[agent]
providers = ["qwen", "backup"]
system_prompt = %q

[[providers]]
name = "qwen"
pod = "qwen"
model = "qwen"
api_key_env = %q

[[providers]]
name = "backup"
base_url = %q
model = "backup"
api_key_env = "WAKE_E2E_BACKUP_KEY"

[openai]
api_keys_env = "WAKE_E2E_DOOR_KEYS"
`, filepath.Join(dir, "data"), simURL+conductorPath, systemPrompt, keyEnv, backupURL)
	path := filepath.Join(dir, "wake.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"RIG_WAKE_TOKEN": secretToken, keyEnv: secretKey,
		"WAKE_E2E_BACKUP_KEY": backupKey, "WAKE_E2E_DOOR_KEYS": doorKey + ",door-SECRET-2",
	}
	logs := &e2e.Log{}
	h := &testHost{Host: e2e.Start(t, app.Options{
		ConfigPath: path, Logger: logs.Logger(slog.LevelDebug), Getenv: func(k string) string { return env[k] },
		Clock: clk, PluginDir: binDir,
	}, logs, nil), clock: clk, log: logs}

	var bodies []string
	fetchAll := func() {
		for _, p := range []string{"/", "/status/pods/qwen", "/status/plugins", "/status/static/status.js", "/status/static/status.css"} {
			status, raw := h.do(t, http.MethodGet, p, nil)
			if status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", p, status, raw)
			}
			bodies = append(bodies, raw)
		}
	}
	fetchAll()
	if got := h.ask(t, "s1", question); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q", got)
	}
	e2e.WaitWatcher(t, clk, waitFor) // the start returned; the watch runs
	fetchAll()
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	waitFragment(t, h, `data-state="ready"`)
	if got := h.ask(t, "s1", question); got != "echo: "+question {
		t.Fatalf("ask once ready: %q", got)
	}
	fetchAll()

	never := []string{
		secretToken, secretKey, backupKey, doorKey, "door-SECRET-2",
		simURL, strings.TrimPrefix(simURL, "http://"), conductorPath, "llm-backup", "/proxy/", "pod-1",
		systemPrompt, "nightjar", question, "private-question", "launch code",
		"://", // no URL of any scheme
	}
	for i, b := range bodies {
		for _, s := range never {
			if strings.Contains(b, s) {
				t.Errorf("response %d holds %q:\n%s", i, s, b)
			}
		}
	}
	// The host did serve all of it somewhere else: the checks above could
	// have failed.
	var pod map[string]any
	if _, raw := h.do(t, http.MethodGet, "/api/pods/qwen", nil); json.Unmarshal([]byte(raw), &pod) != nil || pod["state"] != "ready" {
		t.Errorf("GET /api/pods/qwen: %s", raw)
	}
}
