package chat_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// getPod reads GET /api/pods/{name}, which must answer 200 JSON without any
// URL, and decodes it.
func getPod(t *testing.T, srv *api, name string) map[string]any {
	t.Helper()
	res := srv.on(t).do(http.MethodGet, "/api/pods/"+name, "", "")
	if res.Status != http.StatusOK {
		t.Fatalf("GET /api/pods/%s: %d %s, want 200", name, res.Status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if strings.Contains(res.Body, "http") || strings.Contains(res.Body, "runpod") {
		t.Errorf("the pod report holds a URL: %s", res.Body)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Body), &m); err != nil {
		t.Fatalf("decoding %s: %v", res.Body, err)
	}
	return m
}

// report is a pod report with defaults for what the test does not set.
func report(fields map[string]any) map[string]any {
	m := map[string]any{
		"pod": "qwen", "status": "EXITED", "isRunning": false, "readySince": nil, "lookup": "FOUND",
		"fromCache": false, "state": "asleep", "wakeRequestedAt": nil, "outcome": nil, "ready": false,
	}
	for k, v := range fields {
		m[k] = v
	}
	return m
}

// TestPodReport follows one pod through its states as GET /api/pods/qwen
// reports them: the conductor's view, the machine's, and "ready" only for a
// fresh, RUNNING pod whose readySince belongs to the current wake.
func TestPodReport(t *testing.T) {
	h := newHarness(t)
	srv := h.api
	check := func(step string, want map[string]any) {
		t.Helper()
		if diff := cmp.Diff(want, getPod(t, srv, "qwen")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
	}
	check("asleep", report(nil))

	h.api.ask("s1", "hi")
	h.waitStart(t)
	h.gpu.set(creatingPod())
	wake := "2026-09-09T12:26:25Z"
	check("waking", report(map[string]any{"status": "CREATED", "state": "waking", "wakeRequestedAt": wake}))

	h.advance(t, 6*time.Minute)
	h.gpu.set(loadingPod())
	loading := map[string]any{"status": "RUNNING", "isRunning": true, "state": "waking", "wakeRequestedAt": wake}
	check("loading", report(loading))

	earlier := rfc3339(t0.Add(-61 * time.Second))
	h.gpu.set(readyPod(earlier))
	loading["readySince"] = earlier
	check("readySince of an earlier boot", report(loading))

	h.gpu.set(readyPod("yesterday"))
	loading["readySince"] = "yesterday"
	check("readySince not a time", report(loading))

	h.gpu.set(readyPod("2026-09-09T12:34:56Z"))
	ready := map[string]any{"status": "RUNNING", "isRunning": true, "readySince": "2026-09-09T12:34:56Z",
		"state": "waking", "wakeRequestedAt": wake, "ready": true}
	check("ready, before the watch saw it", report(ready))

	h.armed(t, 1)
	h.clock.Advance(time.Minute)
	h.logs.waitFor(t, "wake ready for pod qwen: ready since 12:34 UTC")
	ready["state"], ready["outcome"] = "ready", "ready"
	check("ready, recorded by the watch", report(ready))

	// D8: the conductor is down; the last view is served, and is not ready.
	h.gpu.setDown()
	ready["fromCache"], ready["ready"] = true, false
	check("conductor down", report(ready))

	h.gpu.set(asleepPod())
	check("stopped", report(map[string]any{"state": "ready", "outcome": "ready", "wakeRequestedAt": wake}))

	if got := h.startsInTheEnd(t); got != 1 {
		t.Errorf("%d starts, want 1: reading a pod never wakes it", got)
	}
}

// TestPodReportConductorDown: nothing known and nothing cached still answers
// 200, so a polling client keeps polling.
func TestPodReportConductorDown(t *testing.T) {
	h := newHarness(t)
	h.gpu.setDown()
	want := report(map[string]any{"status": "", "lookup": "UNREADABLE", "fromCache": true})
	if diff := cmp.Diff(want, getPod(t, h.api, "qwen")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := h.startsInTheEnd(t); got != 0 {
		t.Errorf("%d starts, want 0", got)
	}
}

// TestPodRoute: unknown pods, methods and names.
func TestPodRoute(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantBody   string
		wantAllow  string
	}{
		{"unknown pod", http.MethodGet, "/api/pods/llama", 404, `{"error":"unknown pod: llama"}` + "\n", ""},
		{"control characters are not echoed", http.MethodGet, "/api/pods/bad%0Aname%7F", 404,
			`{"error":"unknown pod (not a valid pod name)"}` + "\n", ""},
		{"a name too long for a pod is not echoed", http.MethodGet, "/api/pods/" + strings.Repeat("p", 64), 404,
			`{"error":"unknown pod (not a valid pod name)"}` + "\n", ""},
		{"POST", http.MethodPost, "/api/pods/qwen", 405, `{"error":"method POST not allowed; use GET"}` + "\n", "GET"},
		{"DELETE", http.MethodDelete, "/api/pods/qwen", 405, `{"error":"method DELETE not allowed; use GET"}` + "\n", "GET"},
		{"HEAD", http.MethodHead, "/api/pods/qwen", 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.api.on(t).do(tt.method, tt.path, "", "")
			if res.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", res.Status, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantBody, res.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if got := res.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow %q, want %q", got, tt.wantAllow)
			}
		})
	}
	if got := h.startsInTheEnd(t); got != 0 {
		t.Errorf("%d starts, want 0", got)
	}
}
