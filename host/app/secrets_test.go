package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
	"github.com/wakeonchat/wakeonchat/host/supervisor"
)

const (
	secretToken = "tok-SECRET-123" // RIG_WAKE_TOKEN
	secretKey   = "key-SECRET-456" // the provider's API key
	keyEnv      = "WAKE_E2E_QWEN_KEY"
	// leakProbe is a message the hostile model answers with a 401 whose
	// error message quotes the request's Authorization header.
	leakProbe = "leak-probe"
)

// seenRequest is one request the conductor or the model received.
type seenRequest struct {
	Method, Path string
	Token        string // X-Rig-Operator-Token
	Auth         string // Authorization
}

// recordingSim serves a simulator and records every request's secret
// headers. It is also hostile: a completion of leakProbe is answered 401
// with the Authorization header in its error message.
type recordingSim struct {
	sim *sim.Sim
	mu  sync.Mutex
	got []seenRequest
}

func (r *recordingSim) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.got = append(r.got, seenRequest{req.Method, req.URL.Path, req.Header.Get("X-Rig-Operator-Token"), req.Header.Get("Authorization")})
	r.mu.Unlock()
	if strings.HasSuffix(req.URL.Path, "/chat/completions") {
		body, _ := io.ReadAll(req.Body)
		if bytes.Contains(body, []byte(leakProbe)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"message": "invalid key " + req.Header.Get("Authorization"), "type": "AuthenticationError", "code": 401,
			}})
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.sim.Handler().ServeHTTP(w, req)
}

func (r *recordingSim) requests() []seenRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenRequest(nil), r.got...)
}

// TestSecretsNeverLeak runs a host with the wake token and the model API
// key set, through a refused start, a wake, a completion, a model error that
// quotes the key and the watch, and checks that both secrets reached the
// conductor and the model where they belong and appear in no log line (at
// every level, the plugins' own lines included) and no response body.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	s := sim.New(sim.Config{Pods: []string{"qwen"}, Clock: clk})
	rec := &recordingSim{sim: s}
	simURL := serveSim(t, s, rec)
	h := startHost(t, hostOptions{
		conductorURL: simURL,
		apiKeyEnv:    keyEnv,
		env:          map[string]string{"RIG_WAKE_TOKEN": secretToken, keyEnv: secretKey},
		clock:        clk,
		level:        supervisor.LevelTrace,
	})
	const session = "secrets"

	// The conductor rejects the token (403): the plugin and the host both
	// log about RIG_WAKE_TOKEN, next to the value they must not print.
	s.ForceStartStatus("qwen", 403)
	if got := h.ask(t, session, "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: reply %q, want %q", got, e2e.ReplyWaking)
	}
	h.waitState(t, "refused")

	// A minute later the next ask wakes again, and the wake goes through.
	s.ForceStartStatus("qwen", 0)
	clk.Advance(time.Minute)
	if got, want := h.ask(t, session, "hello again"), e2e.ReplyRefused(403); got != want {
		t.Errorf("second ask: reply %q, want %q", got, want)
	}

	// The wake's watch reads the pod (the clock steps a minute at a time)
	// and probes the model once the pod runs; the model answers from nine
	// minutes after the wake.
	stepTo(t, clk, t0.Add(10*time.Minute), time.Minute)
	if got, want := h.ask(t, session, "ready?"), "echo: ready?"; got != want {
		t.Errorf("ask once ready: reply %q, want %q", got, want)
	}
	h.stepUntilState(t, "ready", time.Minute)

	status, raw := h.do(t, http.MethodPost, "/api/chat", chatRequest{Message: leakProbe, SessionID: session})
	if status != http.StatusBadGateway || raw != e2e.ProviderFailed {
		t.Errorf("the model's 401: %d %s, want 502 %s", status, raw, e2e.ProviderFailed)
	}
	if failed := h.logged(t, "turn failed"); !strings.Contains(failed.Raw, "HTTP 401") {
		t.Errorf("turn failed line does not name the model's 401: %s", failed.Raw)
	}
	h.pod(t)
	h.do(t, http.MethodGet, "/readyz", nil)

	// The secrets were in play: the token went with every start and nowhere
	// else, the key with every completion and every probe of the model and
	// nowhere else.
	var starts, completions, probes int
	for _, r := range rec.requests() {
		isStart := r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/start")
		isCompletion := strings.HasSuffix(r.Path, "/chat/completions")
		isProbe := r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/v1/models")
		switch {
		case isStart && r.Token != secretToken:
			t.Errorf("%s %s: X-Rig-Operator-Token %q, want the wake token", r.Method, r.Path, r.Token)
		case !isStart && r.Token != "":
			t.Errorf("%s %s carries X-Rig-Operator-Token", r.Method, r.Path)
		case (isCompletion || isProbe) && r.Auth != "Bearer "+secretKey:
			t.Errorf("%s %s: Authorization %q, want the bearer key", r.Method, r.Path, r.Auth)
		case !isCompletion && !isProbe && r.Auth != "":
			t.Errorf("%s %s carries Authorization", r.Method, r.Path)
		}
		if isStart {
			starts++
		}
		if isCompletion {
			completions++
		}
		if isProbe {
			probes++
		}
	}
	if starts != 2 || completions < 2 || probes < 1 {
		t.Errorf("the conductor saw %d starts and the model %d completions and %d probes, want 2 and at least 2 and 1", starts, completions, probes)
	}

	// Stop the host first, so that its last lines are in the log too.
	if err := h.Stop(); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	logs := h.log.String()
	if !strings.Contains(logs, "RIG_WAKE_TOKEN") {
		t.Error("no log line names RIG_WAKE_TOKEN: the refusal path did not run")
	}
	h.log.CheckNoSecrets(t, secretToken, secretKey)
	h.Bodies.CheckNoSecrets(t, secretToken, secretKey)
	h.log.CheckUniqueKeys(t)
	if n := len(h.Bodies.All()); n < 6 {
		t.Errorf("checked %d response bodies, want at least 6", n)
	}
}
