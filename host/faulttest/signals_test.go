package faulttest

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// The plugin faults that reach the plugin processes themselves: a signal,
// a kill. The host runs in the test's process, so its plugins are the
// test's children; a row finds its own among them by their executables,
// in its plugin dir (env.pluginPIDs).

// sigtermPlugins sends SIGTERM to every plugin of the row's host, as
// systemd's default stop does to every process of the unit, and answers
// with h once each signal was delivered: a plugin that dies of it has died
// by then.
func sigtermPlugins(e *env, h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
		pids := e.pluginPIDs(e.gpuPlugin, e.providerPlugin)
		if len(pids) != 2 {
			e.model.t.Errorf("%d plugin processes %v, want 2", len(pids), pids)
		}
		for _, pid := range pids {
			if err := e2e.SignalDelivered(pid, syscall.SIGTERM, waitFor); err != nil {
				e.model.t.Error(err)
			}
		}
		h(w, r, done)
	}
}

// pluginsSurvived: after the signals, both plugins still run, the same
// processes, and the host is ready.
func pluginsSurvived(t *testing.T, e *env, h *host) *host {
	t.Helper()
	e2e.RequireProc(t)
	if pids := e.pluginPIDs(e.gpuPlugin, e.providerPlugin); len(pids) != 2 {
		t.Errorf("%d plugin processes after the SIGTERMs, want the same 2", len(pids))
	}
	got, err := h.Send(http.MethodGet, "/readyz", nil, waitFor)
	if err != nil || got.Status != http.StatusOK {
		t.Errorf("GET /readyz after the SIGTERMs: %d %q %v, want 200", got.Status, got.Body, err)
	}
	return h
}

// readyzFollows is how soon /readyz must follow a plugin's health.
const readyzFollows = time.Second

// awaitReadyz polls GET /readyz (the plugin is another process) until it
// answers status with body, and fails the row after readyzFollows.
func awaitReadyz(t *testing.T, h *host, status int, body string) {
	t.Helper()
	deadline := time.Now().Add(readyzFollows)
	for {
		got, err := h.Send(http.MethodGet, "/readyz", nil, waitFor)
		if err == nil && got.Status == status && got.Body == body {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /readyz: %d %q %v after %v, want %d %q", got.Status, got.Body, err, readyzFollows, status, body)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// killIdleGPUPlugin kills the conductor plugin while no call is in flight:
// /readyz goes 503 and back to 200 with no chat traffic, the relaunch is
// logged, and the new process answers a pod lookup.
func killIdleGPUPlugin(t *testing.T, e *env, h *host) *host {
	t.Helper()
	e2e.RequireProc(t)
	first := e.pluginPID(t, e.gpuPlugin)
	completions := e.model.count(routeComplete)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitReadyz(t, h, http.StatusServiceUnavailable, `{"reason":"conductor plugin not running","status":"not ready"}`+"\n")
	awaitReadyz(t, h, http.StatusOK, `{"status":"ready"}`+"\n")
	// The supervisor logs the relaunch around the plugin's coming back:
	// checked once the hosts stopped.
	e.expectLine(wantLine{level: "WARN", msg: linePluginExited})
	e.expectLine(wantLine{level: "INFO", msg: linePluginRelaunched})
	if n := e.model.count(routeComplete) - completions; n != 0 {
		t.Errorf("%d completions while the plugin was relaunched, want none", n)
	}
	if second := e.pluginPID(t, e.gpuPlugin); second == first {
		t.Errorf("the conductor plugin is still process %d", first)
	}
	got, err := h.Send(http.MethodGet, "/api/pods/qwen", nil, waitFor)
	if err != nil || got.Status != http.StatusOK {
		t.Errorf("GET /api/pods/qwen after the relaunch: %d %q %v, want 200", got.Status, got.Body, err)
	}
	return h
}
