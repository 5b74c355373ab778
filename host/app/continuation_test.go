package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// TestWaitResume runs the foreground continuation (#715) end to end: a
// wakeMode "wait" turn on an asleep pod wakes it and returns a pendingWake
// marker instead of running the prompt; the client polls GET /api/pods/qwen
// until ready; one wakeMode "resume" runs the held prompt; a second resume
// is refused.
func TestWaitResume(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	s := h.sim(t)
	const (
		session = "s-wait"
		prompt  = "summarise the release notes"
	)

	status, r, raw := h.chat(t, chatRequest{Message: prompt, SessionID: session, WakeMode: "wait"})
	if status != http.StatusOK || r.Reply != e2e.ReplyWaking || r.PendingWake == nil {
		t.Fatalf("wait turn: %d %s\nwant 200, the waking reply and a pendingWake", status, raw)
	}
	pw := *r.PendingWake
	if pw.Key == "" || pw.Pod != "qwen" || pw.Provider != "qwen" || pw.State != "waking" ||
		pw.WakeRequestedAt == nil || !pw.WakeRequestedAt.Equal(t0) {
		t.Errorf("pendingWake %s\nwant a key, pod and provider qwen, state waking, wakeRequestedAt %s", raw, t0.Format(time.RFC3339))
	}
	// The start returned and the wake's watch waits on the clock.
	e2e.WaitWatcher(t, clk, waitFor)
	if n := s.StartRequests("qwen"); n != 1 {
		t.Fatalf("start requests after the wait turn: %d, want 1", n)
	}

	// A resume before the pod is ready runs nothing, wakes nothing and keeps
	// the marker.
	clk.Advance(3 * time.Minute)
	status, early, raw := h.chat(t, chatRequest{Message: prompt, SessionID: session, WakeMode: "resume", PendingWake: pw.Key})
	if status != http.StatusOK || early.Reply != e2e.ReplyStillWaking(3) || early.PendingWake == nil || early.PendingWake.Key != pw.Key {
		t.Errorf("early resume: %d %s\nwant 200, %q and the same pendingWake", status, raw, e2e.ReplyStillWaking(3))
	}

	// The client polls the pod once a minute. It is running from 6m30s, but
	// only ready (readySince, fresh) once the model answers at 9m.
	type seen struct {
		Minute    int
		IsRunning bool
		Ready     bool
	}
	var got []seen
	for minute := 4; ; minute++ {
		clk.Set(t0.Add(time.Duration(minute) * time.Minute))
		p, raw := h.pod(t)
		if hasURL(raw) {
			t.Errorf("GET /api/pods/qwen carries a URL: %s", raw)
		}
		got = append(got, seen{minute, p.IsRunning, p.Ready})
		if p.Ready || minute == 15 {
			break
		}
	}
	want := []seen{
		{4, false, false}, {5, false, false}, {6, false, false},
		{7, true, false}, {8, true, false}, {9, true, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("polling GET /api/pods/qwen (-want +got):\n%s", diff)
	}

	status, r, raw = h.chat(t, chatRequest{Message: prompt, SessionID: session, WakeMode: "resume", PendingWake: pw.Key})
	if status != http.StatusOK || r.Reply != "echo: "+prompt || r.PendingWake != nil || r.SessionID != session {
		t.Errorf("resume: %d %s\nwant 200, the model's answer %q and no pendingWake", status, raw, "echo: "+prompt)
	}
	status, _, raw = h.chat(t, chatRequest{Message: prompt, SessionID: session, WakeMode: "resume", PendingWake: pw.Key})
	if status != http.StatusConflict {
		t.Errorf("second resume: %d %s, want 409", status, raw)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests over the whole continuation: %d, want 1", n)
	}
}
