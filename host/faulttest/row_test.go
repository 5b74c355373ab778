package faulttest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// session is the one session every row talks on.
const session = "fault-row"

// The turns a row sends: the history turn before the fault, the fault's turn.
const (
	historyMessage = "hello"
	faultMessage   = "fault turn"
)

// row is one fault of the matrix and everything it must and must not do.
type row struct {
	name string
	// gpuPlugin and providerPlugin name the plugin binaries; "" for the
	// real wake-plugin-conductor and wake-plugin-provider-openai.
	gpuPlugin, providerPlugin string
	// history makes one successful turn (historyMessage) before the fault.
	history bool
	// largeTurns are successful turns sent before the fault, each larger
	// than agent.history_bytes: stored, and never sent as history again.
	largeTurns []string
	// inject scripts the fault on the env's conductor and model. A start-up
	// row's inject runs before app.New (it may damage the data dir).
	inject func(e *env)
	// waits marks a row that spends most of its time waiting on a
	// timeout: it runs beside the others, outside -parallel's count (see
	// TestFaultMatrix).
	waits bool

	// The fault turn's answer: wantStatus and, for a 200, the exact reply
	// (the body is {"reply","sessionId"}), else the exact body.
	wantStatus int
	wantReply  string
	wantBody   string
	// minTook and maxTook bound how long the fault turn took (0: unbounded).
	minTook, maxTook time.Duration
	// turnTimeout is the client's patience with the fault turn (default
	// 10s).
	turnTimeout time.Duration
	// completionTimeout replaces the hosts' completion timeout (default
	// completionTimeout).
	completionTimeout time.Duration

	// lines are the operator lines the fault must produce; absent are
	// message prefixes no line may start with.
	lines  []wantLine
	absent []string

	// gets and completions are the conductor's GetPod requests and the
	// model's completion requests the fault turn caused; starts are the
	// start requests of the whole row, counted after the last Shutdown.
	gets, completions, starts int
	// stored: the fault turn reached a model and its turn is in the history.
	stored bool

	// then runs after the fault turn's checks and returns the host the
	// follow-up runs on (the same one, or a restarted one).
	then func(t *testing.T, e *env, h *host) *host

	// startErr, when set, makes the row a start-up fault: app.New must fail
	// with an error holding every one of these strings (binDirMark stands
	// for the row's plugin dir).
	startErr []string
	// startErrIs is a sentinel the start-up error must wrap.
	startErrIs error
}

// binDirMark stands for the row's plugin dir (env.pluginDir) in its
// startErr.
const binDirMark = "{bin}"

// wantLine is one operator log line: its level, and its message exactly
// (or, with prefix, starting with msg and containing every contains).
type wantLine struct {
	level    string
	msg      string
	prefix   bool
	contains []string
	// err, when set, is the exact "err" attribute.
	err string
}

// runRow runs one row in a fresh world.
func runRow(t *testing.T, r row) {
	labelRow(t)
	e := newEnv(t)
	if r.gpuPlugin != "" {
		e.gpuPlugin = r.gpuPlugin
	}
	if r.providerPlugin != "" {
		e.providerPlugin = r.providerPlugin
	}
	if r.completionTimeout != 0 {
		e.completionTimeout = r.completionTimeout
	}
	if r.startErr != nil {
		runStartupRow(t, e, r)
		return
	}
	e.healthy()
	h := e.start(t)
	hosts := []*host{h}
	var stored []string
	if r.history {
		got := h.chat(t, session, historyMessage)
		if want := replyBody(session, echo(historyMessage)); got.Status != http.StatusOK || got.Body != want {
			t.Fatalf("history turn: %d %q, want 200 %q", got.Status, got.Body, want)
		}
		stored = append(stored, historyMessage)
	}
	for i, m := range r.largeTurns {
		got := h.chat(t, session, m)
		if want := replyBody(session, echo(m)); got.Status != http.StatusOK || got.Body != want {
			t.Fatalf("large turn %d: %d, %d bytes, want 200 with its echo; the log:\n%s", i+1, got.Status, len(got.Body), e.log)
		}
	}

	gets, completions, starts := e.cond.count(routeGetPod), e.model.count(routeComplete), e.cond.count(routeStart)
	r.inject(e)
	timeout := r.turnTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	got, err := h.Send(http.MethodPost, "/api/chat", chatRequest{Message: faultMessage, SessionID: session}, timeout)
	switch {
	case err != nil:
		t.Fatalf("fault turn: %v", err)
	default:
		want := r.wantBody
		if r.wantStatus == http.StatusOK {
			want = replyBody(session, r.wantReply)
		}
		if got.Status != r.wantStatus || got.Body != want {
			t.Errorf("fault turn: %d %q\nwant %d %q", got.Status, got.Body, r.wantStatus, want)
		}
		if got.Took < r.minTook || (r.maxTook > 0 && got.Took > r.maxTook) {
			t.Errorf("fault turn took %v, want between %v and %v", got.Took, r.minTook, r.maxTook)
		}
	}
	if n := e.cond.count(routeGetPod) - gets; n != r.gets {
		t.Errorf("the fault turn made %d GetPod requests at the conductor, want %d", n, r.gets)
	}
	if n := e.model.count(routeComplete) - completions; n != r.completions {
		t.Errorf("the fault turn made %d completion requests at the model, want %d", n, r.completions)
	}
	if r.stored {
		stored = append(stored, faultMessage)
	}

	if r.then != nil {
		if next := r.then(t, e, h); next != h {
			h = next
			hosts = append(hosts, h)
		}
	}
	checkHealthz(t, h)
	checkFollowUp(t, h, session, stored)
	for _, h := range hosts {
		if err := h.Stop(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}

	// Every background start has returned: Shutdown waits for them. The
	// log is whole.
	if n := e.cond.count(routeStart) - starts; n != r.starts {
		t.Errorf("the row made %d start requests, want %d", n, r.starts)
	}
	for _, w := range r.lines {
		checkLine(t, e, w)
	}
	for _, check := range e.atEnd {
		check(t)
	}
	for _, prefix := range r.absent {
		if got := e.log.Matching(t, prefix); len(got) > 0 {
			t.Errorf("a log line starts %q, want none: %s", prefix, got[0].Raw)
		}
	}
	checkLog(t, e, true)
	checkBodies(t, e)
	checkSecretsInPlay(t, e)
	checkNoLeak(t, e)
}

// runStartupRow: app.New must fail with the row's error, leave nothing
// running, and print no secret.
func runStartupRow(t *testing.T, e *env, r row) {
	if r.inject != nil {
		r.inject(e)
	}
	a, err, panicked := e2e.NewApp(e.options(t))
	if a != nil {
		t.Cleanup(func() { a.Shutdown(context.Background()) })
		t.Fatalf("app.New succeeded, want an error holding %q", r.startErr)
	}
	switch {
	case panicked != nil:
		t.Fatalf("app.New panicked instead of returning its error: %v", panicked)
	case err == nil:
		t.Fatalf("app.New: no app and no error, want an error holding %q", r.startErr)
	default:
		for _, s := range r.startErr {
			s = strings.ReplaceAll(s, binDirMark, e.pluginDir)
			if !strings.Contains(err.Error(), s) {
				t.Errorf("app.New: %v\nwant an error holding %q", err, s)
			}
		}
		if r.startErrIs != nil && !errors.Is(err, r.startErrIs) {
			t.Errorf("app.New: %v\nwant an error wrapping %v", err, r.startErrIs)
		}
		for _, secret := range []string{secretToken, secretKey} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("app.New's error carries %q: %v", secret, err)
			}
		}
	}
	if n := len(e.cond.requests("")) + len(e.model.requests("")); n != 0 {
		t.Errorf("a host that failed to start made %d requests", n)
	}
	checkLog(t, e, false)
	checkNoLeak(t, e)
}

// checkLine checks the first line starting with w's message, which must
// be logged already: its level, text and err. Call it once something the
// test saw followed the line (the hosts stopped, a reply it came before).
func checkLine(t *testing.T, e *env, w wantLine) {
	t.Helper()
	got := e.log.Matching(t, w.msg)
	if len(got) == 0 {
		t.Errorf("no log line starts %q, want one at %s; the log:\n%s", w.msg, w.level, e.log.Operator(t))
		return
	}
	l := got[0]
	switch {
	case !w.prefix && l.Msg != w.msg:
		t.Errorf("log line %q, want exactly %q", l.Msg, w.msg)
	case l.Level != w.level:
		t.Errorf("log line %q at %s, want %s", l.Msg, l.Level, w.level)
	}
	for _, s := range w.contains {
		if !strings.Contains(l.Msg, s) {
			t.Errorf("log line %q does not contain %q", l.Msg, s)
		}
	}
	if w.err != "" {
		if got, _ := l.Attrs["err"].(string); got != w.err {
			t.Errorf("log line %q: err %q, want %q", l.Msg, got, w.err)
		}
	}
}
