package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// This file runs the wakehost binary as a child process, for what only a
// real process shows: signals, process groups, exit statuses.

// slowModel is a conductor and a model on loopback: the conductor says the
// pod qwen is RUNNING behind the model, and the model holds every
// completion until the test releases it.
type slowModel struct {
	conductor, model *httptest.Server
	arrived          chan string   // each completion's last message, when it arrives
	release          chan struct{} // closed by the test: the model answers
}

func newSlowModel(t *testing.T) *slowModel {
	t.Helper()
	m := &slowModel{arrived: make(chan string, 16), release: make(chan struct{})}
	m.model = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad completion request", http.StatusBadRequest)
			return
		}
		last := req.Messages[len(req.Messages)-1].Content
		m.arrived <- last
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]string{"role": "assistant", "content": "echo: " + last},
		}}})
	}))
	m.conductor = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/pods/qwen" {
			http.Error(w, "not scripted", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"qwen","status":"RUNNING","isRunning":true,"proxyUrl":"`+m.model.URL+
			`","podId":"pod-1","readySince":"2026-09-09T12:33:56Z","lookup":"FOUND"}`)
	}))
	t.Cleanup(func() {
		select {
		case <-m.release:
		default:
			close(m.release)
		}
		m.conductor.Close()
		m.model.Close()
	})
	return m
}

// awaitCompletion returns the next completion's last message once it has
// reached the model.
func (m *slowModel) awaitCompletion(t *testing.T) string {
	t.Helper()
	select {
	case msg := <-m.arrived:
		return msg
	case <-time.After(waitFor):
		t.Fatalf("no completion reached the model within %v", waitFor)
		return ""
	}
}

// wakehost is a wakehost child process, the leader of a process group of
// its own (as under a service manager or a shell's job control).
type wakehost struct {
	w      *e2e.Wakehost // what Launch started; its Err once exited is closed
	cmd    *exec.Cmd
	addr   string
	base   string
	log    *e2e.Log
	client *http.Client
	exited chan struct{} // closed once the process has been waited for
}

// startWakehost writes a wake.toml for the slow model's conductor (no API
// key), runs wakehost on a free loopback port with args added, and waits
// for /readyz 200. The process is killed at cleanup if it still runs.
func startWakehost(t *testing.T, m *slowModel, args ...string) *wakehost {
	t.Helper()
	e2e.RequireProc(t)
	cfg := e2e.WriteConfig(t, e2e.Config{ConductorURL: m.conductor.URL, LookupTimeout: time.Second, StartTimeout: startTimeout})
	return launchWakehost(t, cfg, nil, args...)
}

// launchWakehost runs wakehost with the wake.toml at cfg (its plugins in
// binDir), the environment env and nothing else, on a free loopback port
// with args added, and waits for /readyz 200. The process is killed at
// cleanup if it still runs.
func launchWakehost(t *testing.T, cfg string, env []string, args ...string) *wakehost {
	t.Helper()
	e2e.RequireProc(t)
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("\n[plugins]\ndir = "+strconv.Quote(binDir)+"\n")...)
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	w := e2e.Launch(t, filepath.Join(binDir, e2e.WakehostBin),
		append([]string{"-config", cfg, "-log-format", "json"}, args...), env, waitFor)
	return &wakehost{w: w, cmd: w.Cmd, addr: w.Addr, base: w.Base, log: w.Log, client: w.Client, exited: w.Exited}
}

func (h *wakehost) get(path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// chat posts a legacy turn in the background; the answer (or the transport
// error) arrives on the channel.
func (h *wakehost) chat(session, message string) <-chan e2e.Response {
	out := make(chan e2e.Response, 1)
	go func() {
		b, _ := json.Marshal(chatRequest{Message: message, SessionID: session})
		resp, err := h.client.Post(h.base+"/api/chat", "application/json", bytes.NewReader(b))
		if err != nil {
			out <- e2e.Response{Body: "transport error: " + err.Error()}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		out <- e2e.Response{Status: resp.StatusCode, Body: string(body)}
	}()
	return out
}

// plugins are the host's plugin processes: the conductor's and the
// provider's.
func (h *wakehost) plugins(t *testing.T) (conductor, provider int) {
	t.Helper()
	return e2e.ChildNamed(t, h.cmd.Process.Pid, e2e.ConductorBin), e2e.ChildNamed(t, h.cmd.Process.Pid, e2e.ProviderBin)
}

// signalGroup sends sig to the host's whole process group, as systemd's
// stop or kill -TERM -PGID does.
func (h *wakehost) signalGroup(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-h.cmd.Process.Pid, sig); err != nil {
		t.Fatalf("kill -%d -%d: %v", sig, h.cmd.Process.Pid, err)
	}
}

// awaitClosed polls until the host no longer accepts connections: it has
// begun its shutdown.
func (h *wakehost) awaitClosed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		conn, err := net.DialTimeout("tcp", h.addr, time.Second)
		if err != nil {
			return
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("wakehost still accepts connections %v after the signal\nthe log:\n%s", waitFor, h.log)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// awaitExit waits for the process to exit and returns its exit status.
func (h *wakehost) awaitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-h.exited:
	case <-time.After(within):
		t.Fatalf("wakehost still running %v after the signal\nthe log:\n%s", within, h.log)
	}
	var exit *exec.ExitError
	switch {
	case h.w.Err == nil:
		return 0
	case errors.As(h.w.Err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("wakehost: %v", h.w.Err)
	return -1
}
