package app_test

import (
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// replyJSON is the exact body of a 200 from /api/chat.
func replyJSON(session, reply string) string {
	return `{"reply":"` + reply + `","sessionId":"` + session + `"}` + "\n"
}

// awaitAnswer waits for a background turn's answer.
func awaitAnswer(t *testing.T, h *wakehost, answer <-chan e2e.Response) e2e.Response {
	t.Helper()
	select {
	case got := <-answer:
		return got
	case <-time.After(waitFor):
		t.Fatalf("the turn did not answer within %v\nthe log:\n%s", waitFor, h.log)
		return e2e.Response{}
	}
}

// TestSIGTERMToTheProcessGroup: systemd's default stop, like kill -TERM
// -PGID, signals every process of the host's group. A slow turn in flight
// still finishes with its answer, and the host exits 0 and stops its
// plugins: they are in groups of their own and outlive the signal.
func TestSIGTERMToTheProcessGroup(t *testing.T) {
	t.Parallel()
	m := newSlowModel(t)
	h := startWakehost(t, m)
	conductor, provider := h.plugins(t)

	answer := h.chat("sigterm", "slow question")
	m.awaitCompletion(t)
	h.signalGroup(t, syscall.SIGTERM)
	h.awaitClosed(t) // the host is shutting down, the turn still in flight
	close(m.release)

	got := awaitAnswer(t, h, answer)
	if want := replyJSON("sigterm", "echo: slow question"); got.Status != http.StatusOK || got.Body != want {
		t.Errorf("the turn in flight: %d %q, want 200 %q", got.Status, got.Body, want)
	}
	if code := h.awaitExit(t, waitFor); code != 0 {
		t.Errorf("wakehost exit status %d, want 0\nthe log:\n%s", code, h.log)
	}
	e2e.WaitGone(t, waitFor, conductor, provider)
	for _, msg := range []string{"turn failed", "turn cut by shutdown", "plugin crashed during a call", "plugin not running; relaunching"} {
		if lines := h.log.Matching(t, msg); len(lines) > 0 {
			t.Errorf("a log line %q: %s", msg, lines[0].Raw)
		}
	}
	if len(h.log.Matching(t, "shutting down")) != 1 {
		t.Errorf("no \"shutting down\" line\nthe log:\n%s", h.log)
	}
}

// TestHostKilledTakesItsPlugins: a host killed outright (SIGKILL, no
// shutdown) leaves no plugin behind, although each plugin has a process
// group of its own: Pdeathsig is the process's, not the group's.
func TestHostKilledTakesItsPlugins(t *testing.T) {
	t.Parallel()
	m := newSlowModel(t)
	h := startWakehost(t, m)
	conductor, provider := h.plugins(t)
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := h.awaitExit(t, waitFor); code != -1 {
		t.Errorf("wakehost exit status %d, want -1 (killed)", code)
	}
	e2e.WaitGone(t, waitFor, conductor, provider)
}

// TestShutdownGraceRanOut: a turn still running when the grace runs out is
// cut and says so: the client gets a 503 naming the shutdown, the log says
// "turn cut by shutdown" (not "turn failed", not a plugin crash) after a
// WARN naming how many turns were cut, and the host exits 0.
func TestShutdownGraceRanOut(t *testing.T) {
	t.Parallel()
	m := newSlowModel(t)
	h := startWakehost(t, m, "-shutdown-grace", "300ms")
	conductor, provider := h.plugins(t)

	answer := h.chat("cut", "never answered")
	m.awaitCompletion(t)
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	got := awaitAnswer(t, h, answer)
	if want := `{"error":"the host shut down before this turn finished"}` + "\n"; got.Status != http.StatusServiceUnavailable || got.Body != want {
		t.Errorf("the cut turn: %d %q, want 503 %q", got.Status, got.Body, want)
	}
	if code := h.awaitExit(t, waitFor); code != 0 {
		t.Errorf("wakehost exit status %d, want 0\nthe log:\n%s", code, h.log)
	}
	e2e.WaitGone(t, waitFor, conductor, provider)

	ranOut := h.log.Matching(t, "shutdown grace ran out")
	if len(ranOut) != 1 || ranOut[0].Level != "WARN" || ranOut[0].Attrs["turns_cut"] != float64(1) {
		t.Errorf("\"shutdown grace ran out\" lines %+v, want one WARN with turns_cut 1", ranOut)
	}
	cut := h.log.Matching(t, "turn cut by shutdown")
	if len(cut) != 1 || cut[0].Level != "WARN" || cut[0].Attrs["session"] != "cut" {
		t.Errorf("\"turn cut by shutdown\" lines %+v, want one WARN for session cut", cut)
	}
	for _, msg := range []string{"turn failed", "plugin crashed during a call", "provider plugin failed"} {
		if lines := h.log.Matching(t, msg); len(lines) > 0 {
			t.Errorf("a log line %q: %s", msg, lines[0].Raw)
		}
	}
}

// TestShutdownGraceDefault: without -shutdown-grace, the grace covers a
// turn whose completion takes the whole completion_timeout (120s by
// default) with its two pod lookups (lookup_timeout 1s here, each capped
// 1s later) and 5s more; the flag overrides it.
func TestShutdownGraceDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want time.Duration
	}{
		{"default", nil, 120*time.Second + 2*2*time.Second + 5*time.Second},
		{"-shutdown-grace 7s", []string{"-shutdown-grace", "7s"}, 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startWakehost(t, newSlowModel(t), tt.args...)
			if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := h.awaitExit(t, waitFor); code != 0 {
				t.Errorf("wakehost exit status %d, want 0", code)
			}
			lines := h.log.Matching(t, "shutting down")
			if len(lines) != 1 || lines[0].Attrs["grace"] != float64(tt.want) {
				t.Errorf("\"shutting down\" lines %+v, want one with grace %v", lines, tt.want)
			}
		})
	}
}
